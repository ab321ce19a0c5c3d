// What the verbs fault library's two forms export, read with objdump -T (binutils), the way the
// dynamic linker sees them:
// - the LD_PRELOAD form: exactly the libibverbs functions it wraps, unversioned (so that they
//   take the place of libibverbs' own for every caller the dynamic linker resolves), nothing else;
// - the forwarding form: exactly the real libibverbs' public functions, each under the same
//   version nodes, default and compatibility versions alike, so that NCCL's
//   dlvsym(handle, name, "IBVERBS_1.1") finds every one it asks for.
// And a program that opens it as NCCL does gets the wrapped ibv_open_device, not the real one.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

namespace {

// (name, version, default) of every function the library defines, from objdump -T.
using Export = std::tuple<std::string, std::string, bool>;

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  pclose(pipe);
  return out;
}

std::set<Export> exportedFunctions(const std::string& library, bool only_ibverbs_1) {
  std::set<Export> out;
  std::istringstream lines(run("objdump -T " + library));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(" DF ") == std::string::npos || line.find("*UND*") != std::string::npos) continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.size() < 2) continue;
    std::string version = f[f.size() - 2];
    const std::string name = f.back();
    bool is_default = true;
    if (version.size() > 2 && version.front() == '(') {
      is_default = false;
      version = version.substr(1, version.size() - 2);
    }
    if (only_ibverbs_1 && version.rfind("IBVERBS_1.", 0) != 0) continue;
    out.insert({name, version, is_default});
  }
  return out;
}

TEST(ShimExports, ThePreloadFormExportsOnlyTheFunctionsItWrapsUnversioned) {
  const auto exports = exportedFunctions(FC_SHIM_PRELOAD, false);
  std::set<std::string> names;
  for (const auto& [name, version, is_default] : exports) {
    names.insert(name);
    EXPECT_EQ(version, "Base") << name << " must carry no version, to stand for every caller";
  }
  EXPECT_EQ(names, (std::set<std::string>{"ibv_open_device", "ibv_close_device", "ibv_create_qp",
                                          "ibv_destroy_qp", "ibv_reg_mr", "ibv_reg_mr_iova",
                                          "ibv_reg_mr_iova2", "ibv_get_cq_event",
                                          "ibv_ack_cq_events", "ibv_destroy_cq"}));
}

TEST(ShimExports, TheForwardingFormExportsLibibverbsOwnFunctionsAndVersions) {
  const auto real = exportedFunctions(FC_REAL_LIBIBVERBS, true);
  const auto forwarding = exportedFunctions(FC_SHIM_FORWARDING, true);
  ASSERT_GT(real.size(), 90u) << "objdump read nothing from " << FC_REAL_LIBIBVERBS;
  EXPECT_EQ(forwarding, real);
  EXPECT_EQ(exportedFunctions(FC_SHIM_FORWARDING, false), forwarding)
      << "nothing but libibverbs' public functions is exported";
  EXPECT_TRUE(forwarding.count({"ibv_open_device", "IBVERBS_1.1", true}));
  EXPECT_TRUE(forwarding.count({"ibv_open_device", "IBVERBS_1.0", false}));
  EXPECT_TRUE(forwarding.count({"ibv_reg_mr_iova2", "IBVERBS_1.8", true}));
}

TEST(ShimExports, AProgramThatOpensItAsNcclDoesGetsTheWrappedOpen) {
  // No RDMA device on this host: the program finds every function and no device (exit 1).
  const std::string through_shim = run(std::string(FC_NCCL_STYLE_OPEN) + " " + FC_SHIM_FORWARDING);
  EXPECT_NE(through_shim.find("\"same_as_real\": false"), std::string::npos) << through_shim;
  const std::string direct = run(std::string(FC_NCCL_STYLE_OPEN) + " " + FC_REAL_LIBIBVERBS);
  EXPECT_NE(direct.find("\"same_as_real\": true"), std::string::npos) << direct;
}

}  // namespace
