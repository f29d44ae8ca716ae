# hgeval_add_test(<source.cc> LIBS <targets...>)
# One executable per test file. The ctest label comes from the file name:
#   *_golden_test.cc -> golden, *_gpu_test.cc -> gpu, *_e2e_test.cc -> e2e, else unit.
# Tests run with HGEVAL_SOURCE_DIR set so fixtures are found from any build folder.
# SERIAL: ctest runs the file's tests with nothing beside them (bounds on a server's peak
# memory or latency that other tests' load would perturb).
include(GoogleTest)
function(hgeval_add_test src)
  cmake_parse_arguments(ARG "SERIAL" "TIMEOUT" "LIBS" ${ARGN})
  get_filename_component(name ${src} NAME_WE)
  set(label unit)
  if(name MATCHES "_golden_test$")
    set(label golden)
  elseif(name MATCHES "_gpu_test$")
    set(label gpu)
  elseif(name MATCHES "_e2e_test$")
    set(label e2e)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE HGEVAL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                             HGEVAL_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set(serial FALSE)
  if(ARG_SERIAL)
    set(serial TRUE)
  endif()
  gtest_discover_tests(${name}
    PROPERTIES LABELS ${label} TIMEOUT ${ARG_TIMEOUT}
               ENVIRONMENT "HGEVAL_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
               RUN_SERIAL ${serial}
    DISCOVERY_TIMEOUT 60)
endfunction()
