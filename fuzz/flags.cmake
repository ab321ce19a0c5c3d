# Included by the top-level CMakeLists.txt before any module when FC_FUZZ is on: everything is
# compiled with ASan and UBSan (UB aborts, so the fuzzer reports it), and the project's libraries
# also with libFuzzer's coverage instrumentation (FC_FUZZ_COVERAGE_FLAGS, added by fc_add_library):
# that is the code the fuzz targets exercise. Only the fuzz targets link the fuzzer's main. Test
# and app translation units go without coverage: it made a gtest TU 55% slower to compile (17.2 s
# against 11.0 s for analysis_test.cc) and nothing reads it there. The other executables link the
# sanitizer runtime, so deploy/test.sh builds the unit tier in the same tree and runs it under
# ASan and UBSan: one clang build serves both. Line tables only: what sanitizer reports need, at a
# fraction of full debug info's compile and link time.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FC_FUZZ needs clang (libFuzzer), e.g. CC=clang-14 CXX=clang++-14; "
                      "got ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER}")
endif()
add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -gline-tables-only)
add_link_options(-fsanitize=address,undefined)
set(FC_FUZZ_COVERAGE_FLAGS -fsanitize=fuzzer-no-link)
