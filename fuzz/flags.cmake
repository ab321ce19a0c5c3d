# Included by the top-level CMakeLists.txt before any module when FC_FUZZ is on: every library is
# compiled with libFuzzer's coverage instrumentation plus ASan and UBSan (UB aborts, so the fuzzer
# reports it); only the fuzz targets link the fuzzer's main. The other executables link the
# sanitizer runtime's default coverage callbacks, so deploy/test.sh builds the unit tier in the
# same tree and runs it under ASan and UBSan: one clang build serves both. Line tables only: what
# sanitizer reports need, at a fraction of full debug info's compile and link time.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FC_FUZZ needs clang (libFuzzer), e.g. CC=clang-14 CXX=clang++-14; "
                      "got ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER}")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -gline-tables-only)
add_link_options(-fsanitize=address,undefined)
