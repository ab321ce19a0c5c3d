// Why samples are stored in batches: inserts the same samples into a WAL database on disk one
// transaction per sample, then in batches of 64 and 1024 (what a rank's 100 ms flush yields), and
// prints the rates side by side with their ratios. Run: ./build/bench/store_batch_bench [N]

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/store.h"

using fabric_chaos::core::Sample;
using fabric_chaos::store::Store;

namespace {

double insertRate(const std::string& dir, int total, int batch) {
  const std::string path = dir + "/bench-" + std::to_string(batch) + ".db";
  auto store = Store::open(path);
  if (!store.isOk()) {
    std::fprintf(stderr, "open: %s\n", store.status().toString().c_str());
    std::exit(1);
  }
  auto run = (*store)->createRun("bench", nlohmann::json::object(), "none");
  std::vector<Sample> samples;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < total; ++i) {
    samples.push_back({i % 4, i / 4, i * 1.0, 1.0, 262144});
    if (static_cast<int>(samples.size()) == batch || i == total - 1) {
      auto status = (*store)->appendSamples(*run, samples);
      if (!status.isOk()) {
        std::fprintf(stderr, "append: %s\n", status.toString().c_str());
        std::exit(1);
      }
      samples.clear();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return total / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const int total = argc > 1 ? std::atoi(argv[1]) : 4000;
  char tmpl[] = "/tmp/fc-bench-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const double single = insertRate(dir, total, 1);
  const double batch64 = insertRate(dir, total, 64);
  const double batch1024 = insertRate(dir, total, 1024);
  std::printf("samples: %d, WAL, synchronous=FULL\n", total);
  std::printf("batch    1: %10.0f samples/s  (1.00x)\n", single);
  std::printf("batch   64: %10.0f samples/s  (%.1fx)\n", batch64, batch64 / single);
  std::printf("batch 1024: %10.0f samples/s  (%.1fx)\n", batch1024, batch1024 / single);
  std::filesystem::remove_all(dir);
  return 0;
}
