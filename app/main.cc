#include <cstdio>

#include "app/version.h"

int main(int, char**) {
  std::printf("fabric-chaos %s\n", FABRIC_CHAOS_VERSION);
  return 0;
}
