# ctest's test_count_check: every TEST_CASE in tests/*.cpp is exactly one ctest entry, and the test binary
# knows exactly those cases. A TEST_CASE name that catch_discover_tests splits (a ';' in it) would make two
# entries that match no test case; this check, and '-w NoTests' on every entry, make that an error.
# Arguments: CTEST, BUILD_DIR, SOURCE_DIR, TEST_BINARY, OTHER_TESTS (comma-separated ctest entries that are not
# TEST_CASEs).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST)
string(REPLACE "," ";" OTHER_TESTS "${OTHER_TESTS}")
file(GLOB sources "${SOURCE_DIR}/tests/*.cpp")
set(in_sources 0)
foreach(source ${sources})
  file(STRINGS "${source}" lines REGEX "^TEST_CASE\\(")
  list(LENGTH lines n)
  math(EXPR in_sources "${in_sources} + ${n}")
endforeach()

# From the tests' own build folder: `ctest -N` rewrites Testing/Temporary/LastTest.log where it runs, and the
# top-level one holds the log of the run in progress (scripts/test.sh reads the skip reasons from it).
execute_process(COMMAND "${CTEST}" -N WORKING_DIRECTORY "${BUILD_DIR}/tests" OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ctest -N failed (${rc})")
endif()
string(REGEX MATCHALL "Test +#[0-9]+: [^\n]*" entries "${listing}")
set(in_ctest 0)
foreach(entry ${entries})
  string(REGEX REPLACE "Test +#[0-9]+: " "" name "${entry}")
  if(NOT name IN_LIST OTHER_TESTS)
    math(EXPR in_ctest "${in_ctest} + 1")
  endif()
endforeach()

execute_process(COMMAND "${TEST_BINARY}" --list-test-names-only OUTPUT_VARIABLE names RESULT_VARIABLE rc)
string(REGEX MATCHALL "[^\n]+" names "${names}")
list(LENGTH names in_binary)

message(STATUS "TEST_CASEs in tests/*.cpp: ${in_sources}; in the test binary: ${in_binary}; ctest entries for them: ${in_ctest}")
if(NOT in_sources EQUAL in_ctest OR NOT in_sources EQUAL in_binary)
  message(FATAL_ERROR "the counts differ: a TEST_CASE is not run exactly once by ctest (a ';' in its name?)")
endif()
