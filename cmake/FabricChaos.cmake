include(${CMAKE_CURRENT_LIST_DIR}/Precompiled.cmake)

# fc_add_library(NAME SOURCES ... DEPS ...): one static library per module, include root = repo root.
function(fc_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(FC_FUZZ)
    target_compile_options(${name} PRIVATE ${FC_FUZZ_COVERAGE_FLAGS})
  endif()
  fc_use_pch(${name} lib)
endfunction()

# fc_add_test(NAME SOURCES ... DEPS ... LABEL unit|privileged|vm|ibsim|browser [TIMEOUT s])
# One test executable per test file, registered with ctest under its tier label. Its main() is
# tests/support/gtest_main.cc: under CI=true a skipped test fails the executable.
function(fc_add_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock fc_gtest_main)
  fc_use_pch(${name} test)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS ${ARG_LABEL}
    ENVIRONMENT "FC_BINARY=$<TARGET_FILE:fabric-chaos>;FC_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if(ARG_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
  if(ARG_LABEL STREQUAL "privileged")
    # tests/vm runs every privileged test again inside a 6.12 guest (privileged_in_guest_test).
    set_property(GLOBAL APPEND PROPERTY FC_PRIVILEGED_TESTS ${name})
  endif()
  if(NOT ARG_LABEL STREQUAL "unit")
    # Root-networking tiers build and tear down namespaces: never two at once.
    set_tests_properties(${name} PROPERTIES RESOURCE_LOCK fabric)
  endif()
endfunction()

# fc_module_library(NAME DIRS dir... DEPS ...): a module library made of every .cc file in DIRS
# (relative to the current source dir). A module with no sources yet is an INTERFACE library.
function(fc_module_library name)
  cmake_parse_arguments(ARG "" "" "DIRS;DEPS" ${ARGN})
  set(sources "")
  foreach(dir ${ARG_DIRS})
    file(GLOB found CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/*.cc)
    list(APPEND sources ${found})
  endforeach()
  if(sources)
    fc_add_library(${name} SOURCES ${sources} DEPS ${ARG_DEPS})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# Tests that are not gtest executables of ours (node, sh, deploy/vm/run-in-vm.sh) run behind this
# wrapper: COMMAND ${FC_NO_SKIP_IN_CI} prog args... Under CI=true a skip (exit 77, node:test
# "# skipped N", gtest "[  SKIPPED ]" lines) fails the test; outside CI it only execs the command.
set(FC_NO_SKIP_IN_CI ${PROJECT_SOURCE_DIR}/tests/support/ci_no_skip.sh)
