#pragma once
// ECN marking on the lab switch's modelled ports (scenarios::EcnMarking, docs/lab.md "ECN
// marking"): how `lab up --ecn KMIN,KMAX,PMAX` is read and checked, the probability a packet is
// marked at a given backlog (the BPF marker's own fixed-point arithmetic,
// injectors/sys/ecn_marker_abi.h, so tests check what the kernel runs), and the marker's
// per-port configuration. Pure; the labs attach the marker (injectors/sys/ecn_marker.h).

#include <cstdint>
#include <string>

#include "core/status.h"
#include "injectors/sys/ecn_marker.h"
#include "scenarios/topology.h"

namespace fabric_chaos::lab {

// "20k,80k,0.2": Kmin and Kmax as parseBufferSize reads them (binary multiples), then Pmax.
// kInvalidArgument naming --ecn. Ranges are checkEcnMarking's.
core::Result<scenarios::EcnMarking> parseEcnMarking(const std::string& text);

// 0 < kmin < kmax <= the class buffer, 0 < pmax <= 1; OK without model.ecn. kInvalidArgument
// naming --ecn.
core::Status checkEcnMarking(const scenarios::EgressModel& model);

// Pmax as the marker's fixed point (out of sys::kEcnProbabilityOne), rounded.
uint64_t fixedProbability(double probability);

// The probability that an ECT packet joining a class with `backlog_bytes` already queued is
// marked: 0 below kmin, linear from 0 to pmax between kmin and kmax, 1 above kmax.
double markProbability(const scenarios::EcnMarking& marking, int64_t backlog_bytes);

// The marker of one port of `model` (which has ecn): its virtual queues drain at the line rate.
sys::EcnMarkerConfig ecnMarkerConfig(const scenarios::EgressModel& model);

// "ECN (CE) from 20 KiB to 80 KiB of class backlog, up to 20 %, all above" for progress lines.
std::string describeEcn(const scenarios::EcnMarking& marking);

}  // namespace fabric_chaos::lab
