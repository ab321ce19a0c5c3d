# Included by the top-level CMakeLists.txt before any module when FC_FUZZ is on: every library is
# compiled with libFuzzer's coverage instrumentation plus ASan and UBSan (UB aborts, so the fuzzer
# reports it); only the fuzz targets link the fuzzer's main. Build just the fuzz_* targets in
# such a tree (deploy/fuzz.sh): the rest of the project is not meant to link this way.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FC_FUZZ needs clang (libFuzzer), e.g. CC=clang-14 CXX=clang++-14; "
                      "got ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER}")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=address,undefined)
