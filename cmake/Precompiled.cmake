# Precompiled headers: nlohmann/json and the standard headers nearly every translation unit
# includes, plus GoogleTest for the tests. Parsing them took 2.6 s (json) and 1.7 s (gtest) of a
# gcc TU's 4-7 s at -O0 -g1, and 2 s of a clang ASan TU's 11 s; a tier builds some 300 TUs. Two
# PCH targets are compiled once and every library and test reuses one of them (REUSE_FROM): a
# test executable has one TU, so a PCH of its own would cost as much as it saves. clang accepts a
# PCH built without a user's extra -D macros, but not one built with other sanitizer coverage
# flags, so under FC_FUZZ the library PCH gets the libraries' coverage flags.
include_guard(GLOBAL)

option(FC_PCH "Precompile the common headers" ON)

set(FC_PCH_COMMON_HEADERS
    <algorithm> <chrono> <cstdint> <functional> <map> <memory> <optional> <set> <string>
    <string_view> <unordered_map> <utility> <vector> <nlohmann/json.hpp>)

if(FC_PCH)
  set(fc_pch_source ${CMAKE_BINARY_DIR}/fc_pch.cc)
  file(WRITE ${fc_pch_source} "// The translation unit the shared precompiled headers are built with.\n")
  add_library(fc_pch_lib STATIC ${fc_pch_source})
  target_link_libraries(fc_pch_lib PRIVATE nlohmann_json::nlohmann_json)
  target_precompile_headers(fc_pch_lib PRIVATE ${FC_PCH_COMMON_HEADERS})
  if(FC_FUZZ)
    target_compile_options(fc_pch_lib PRIVATE ${FC_FUZZ_COVERAGE_FLAGS})
  endif()
endif()

# The test PCH needs GoogleTest, found only when the tests are built.
function(fc_pch_define_test_target)
  if(FC_PCH AND NOT TARGET fc_pch_test)
    add_library(fc_pch_test STATIC ${fc_pch_source})
    target_link_libraries(fc_pch_test PRIVATE nlohmann_json::nlohmann_json GTest::gtest
                                              GTest::gmock)
    target_precompile_headers(fc_pch_test PRIVATE ${FC_PCH_COMMON_HEADERS} <gtest/gtest.h>
                              <gmock/gmock.h>)
  endif()
endfunction()

# fc_use_pch(TARGET lib|test)
function(fc_use_pch target kind)
  if(NOT FC_PCH)
    return()
  endif()
  if(kind STREQUAL "test")
    fc_pch_define_test_target()
    target_precompile_headers(${target} REUSE_FROM fc_pch_test)
  else()
    target_precompile_headers(${target} REUSE_FROM fc_pch_lib)
  endif()
endfunction()
