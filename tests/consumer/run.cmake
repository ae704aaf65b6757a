# ctest's find_package_consumer: install tvie into a scratch prefix, configure and build a separate project
# against it with find_package(tvie), and run the result. Arguments: BUILD_DIR, SOURCE_DIR, Torch_DIR, WORK_DIR,
# and the compile and link flags tvie was built with (a sanitizer build's consumer must link the runtimes).
file(REMOVE_RECURSE "${WORK_DIR}")
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
step(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
step(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/build" -DCMAKE_BUILD_TYPE=Release
     "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" "-DTorch_DIR=${Torch_DIR}"
     "-DTVIE_EXAMPLE_SOURCE=${SOURCE_DIR}/examples/custom_workload.cpp" "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}"
     "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_LINK_FLAGS}")
step(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
step("${WORK_DIR}/build/consumer" --device cpu)
if(NOT step_output MATCHES "tvie compare: regressor \\(example\\) on cpu")
  message(FATAL_ERROR "unexpected output:\n${step_output}")
endif()
message(STATUS "find_package(tvie) consumer built and ran:\n${step_output}")
file(REMOVE_RECURSE "${WORK_DIR}")
