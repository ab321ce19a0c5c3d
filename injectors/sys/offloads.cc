#include "injectors/sys/offloads.h"

#include <linux/ethtool.h>

#include <cerrno>
#include <cstring>

#include "injectors/sys/ethtool.h"
#include "injectors/sys/netlink_status.h"
#include "injectors/sys/netns.h"

namespace fabric_chaos::sys {
namespace {

// The feature bits the kernel reports, by index into the ETH_SS_FEATURES string set.
struct FeatureTable {
  std::vector<std::string> names;
  std::vector<ethtool_get_features_block> blocks;

  bool bit(const std::vector<ethtool_get_features_block>& from, size_t i,
           uint32_t ethtool_get_features_block::*field) const {
    return (from[i / 32].*field & (1U << (i % 32))) != 0;
  }
};

// Must run inside the device's namespace.
core::Result<FeatureTable> readFeatures(int fd, const std::string& netns,
                                        const std::string& ifname) {
  // How many features there are.
  std::vector<uint8_t> info_buf(sizeof(ethtool_sset_info) + sizeof(uint32_t), 0);
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buf.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_FEATURES;
  FC_RETURN_IF_ERROR(ethtoolRequest(fd, netns, ifname, info, "ETHTOOL_GSSET_INFO"));
  if ((info->sset_mask & (1ULL << ETH_SS_FEATURES)) == 0) {
    return core::Status(core::StatusCode::kNotSupported,
                        ifname + " does not report its features to ethtool");
  }
  const uint32_t count = info->data[0];

  // Their names.
  std::vector<uint8_t> strings_buf(sizeof(ethtool_gstrings) + size_t{count} * ETH_GSTRING_LEN, 0);
  auto* strings = reinterpret_cast<ethtool_gstrings*>(strings_buf.data());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_FEATURES;
  strings->len = count;
  FC_RETURN_IF_ERROR(ethtoolRequest(fd, netns, ifname, strings, "ETHTOOL_GSTRINGS"));

  // Their state.
  const uint32_t blocks = (count + 31) / 32;
  std::vector<uint8_t> features_buf(
      sizeof(ethtool_gfeatures) + size_t{blocks} * sizeof(ethtool_get_features_block), 0);
  auto* features = reinterpret_cast<ethtool_gfeatures*>(features_buf.data());
  features->cmd = ETHTOOL_GFEATURES;
  features->size = blocks;
  FC_RETURN_IF_ERROR(ethtoolRequest(fd, netns, ifname, features, "ETHTOOL_GFEATURES"));

  FeatureTable table;
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = reinterpret_cast<const char*>(strings->data) + size_t{i} * ETH_GSTRING_LEN;
    table.names.emplace_back(name, ::strnlen(name, ETH_GSTRING_LEN));
  }
  table.blocks.assign(features->features, features->features + blocks);
  return table;
}

class EthtoolOffloads : public Offloads {
 public:
  core::Result<std::map<std::string, bool>> features(const std::string& netns,
                                                     const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    std::map<std::string, bool> out;
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      const core::UniqueFd sock = openEthtoolSocket();
      if (!sock.valid()) return core::errnoStatus(errno, "cannot open an ethtool socket");
      auto table = readFeatures(sock.get(), netns, ifname);
      if (!table.isOk()) return table.status();
      for (size_t i = 0; i < table->names.size(); ++i) {
        if (table->names[i].empty()) continue;
        out[table->names[i]] = table->bit(table->blocks, i, &ethtool_get_features_block::active);
      }
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return out;
  }

  core::Result<OffloadChange> disableSegmentation(const std::string& netns,
                                                  const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    OffloadChange change;
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      const core::UniqueFd sock = openEthtoolSocket();
      if (!sock.valid()) return core::errnoStatus(errno, "cannot open an ethtool socket");
      auto before = readFeatures(sock.get(), netns, ifname);
      if (!before.isOk()) return before.status();
      const size_t blocks = before->blocks.size();
      std::vector<uint8_t> request_buf(
          sizeof(ethtool_sfeatures) + blocks * sizeof(ethtool_set_features_block), 0);
      auto* request = reinterpret_cast<ethtool_sfeatures*>(request_buf.data());
      request->cmd = ETHTOOL_SFEATURES;
      request->size = static_cast<uint32_t>(blocks);
      std::vector<size_t> wanted;  // segmentation features that are on now
      for (size_t i = 0; i < before->names.size(); ++i) {
        if (!isSegmentationOffload(before->names[i])) continue;
        const bool active = before->bit(before->blocks, i, &ethtool_get_features_block::active);
        const bool requested =
            before->bit(before->blocks, i, &ethtool_get_features_block::requested);
        const bool changeable =
            before->bit(before->blocks, i, &ethtool_get_features_block::available);
        if (!active && !requested) continue;
        if (!changeable) {
          if (active) change.still_on[before->names[i]] = "fixed";
          continue;
        }
        // valid bit set, requested bit clear: "turn this off".
        request->features[i / 32].valid |= 1U << (i % 32);
        wanted.push_back(i);
      }
      if (wanted.empty()) return core::Status::ok();
      // A positive result (ETHTOOL_F_WISH / _UNSUPPORTED) means some wish was not granted; the
      // read-back below says which.
      FC_RETURN_IF_ERROR(ethtoolRequest(sock.get(), netns, ifname, request, "ETHTOOL_SFEATURES"));
      auto after = readFeatures(sock.get(), netns, ifname);
      if (!after.isOk()) return after.status();
      for (size_t i : wanted) {
        const bool was = before->bit(before->blocks, i, &ethtool_get_features_block::active);
        const bool now = after->bit(after->blocks, i, &ethtool_get_features_block::active);
        if (now) {
          change.still_on[before->names[i]] = "refused";
        } else if (was) {
          change.turned_off.push_back(before->names[i]);
        }
      }
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return change;
  }

 private:
  static core::Status invalidIfname(const std::string& ifname) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "invalid interface name '" + ifname + "'");
  }
};

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool isSegmentationOffload(const std::string& feature) {
  if (endsWith(feature, "-segmentation")) return true;
  for (const char* name : {"tx-gso-list", "tx-gso-partial", "rx-gro", "rx-gro-hw", "rx-lro",
                           "rx-gro-list", "rx-udp-gro-forwarding"}) {
    if (feature == name) return true;
  }
  return false;
}

std::unique_ptr<Offloads> makeEthtoolOffloads() { return std::make_unique<EthtoolOffloads>(); }

}  // namespace fabric_chaos::sys
