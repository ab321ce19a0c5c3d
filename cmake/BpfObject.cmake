# fc_embed_bpf_object(TARGET SOURCE src.bpf.c SYMBOL name): compiles a BPF C program with clang for
# the bpf target at build time and adds a generated .cc to TARGET holding the object's bytes as
# `extern const unsigned char name[]` and `extern const std::size_t name_size`, so the binary
# loads it from memory (bpf_object__open_mem) and needs no file next to it.
find_program(FC_BPF_CLANG NAMES clang-14 clang REQUIRED)

function(fc_embed_bpf_object target)
  cmake_parse_arguments(ARG "" "SOURCE;SYMBOL" "" ${ARGN})
  get_filename_component(stem ${ARG_SOURCE} NAME_WE)
  set(object ${PROJECT_BINARY_DIR}/generated/bpf/${stem}.bpf.o)
  set(embedded ${PROJECT_BINARY_DIR}/generated/bpf/${stem}_object.cc)
  # The multiarch directory holds asm/types.h, which linux/types.h includes.
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-multiarch OUTPUT_VARIABLE multiarch
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT multiarch)
    set(multiarch x86_64-linux-gnu)
  endif()
  add_custom_command(OUTPUT ${object}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/generated/bpf
    COMMAND ${FC_BPF_CLANG} -O2 -g -target bpf -Wall -Wextra -Werror
      -I/usr/include/${multiarch} -I${PROJECT_SOURCE_DIR} -MD -MF ${object}.d
      -c ${ARG_SOURCE} -o ${object}
    DEPENDS ${ARG_SOURCE}
    DEPFILE ${object}.d
    COMMENT "Compiling BPF object ${stem}.bpf.o"
    VERBATIM)
  add_custom_command(OUTPUT ${embedded}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${object} -DOUTPUT=${embedded} -DSYMBOL=${ARG_SYMBOL}
      -P ${PROJECT_SOURCE_DIR}/cmake/embed_bytes.cmake
    DEPENDS ${object} ${PROJECT_SOURCE_DIR}/cmake/embed_bytes.cmake
    COMMENT "Embedding ${stem}.bpf.o"
    VERBATIM)
  target_sources(${target} PRIVATE ${embedded})
endfunction()
