#pragma once
// What a traffic kind's observation (TrafficGenerators::observe, injectors/traffic/
// traffic_generators.h) says about its aggressors, and how the observations of a set cut into
// parts (one per agent, injectors::TrafficPart) become the one the whole set would have given.
// Pure.

#include <nlohmann/json.hpp>
#include <vector>

namespace fabric_chaos::injectors {

// Jain's fairness index of shares (sum^2 / (n * sum of squares)): 1 when all are equal, 1/n
// when one takes everything; 1 for no shares or all zero (nothing to be unfair about).
double jainFairnessIndex(const std::vector<double>& shares);

// `part` folded into `whole` (an empty object to start): the sources, their bytes and goodputs
// appended in order, the sink taken from the part that has one, running only if both were, the
// first exit_code/log kept, Jain's index recomputed over every source's bytes. Fields the parts
// do not share (a hot spot's "path") are kept from the first that has them.
nlohmann::json mergeTrafficObservations(const nlohmann::json& whole, const nlohmann::json& part);

}  // namespace fabric_chaos::injectors
