# Tests that compare a measured time with a projection: they run alone (ctest -j runs the others side by side,
# and two processes sharing the cores would make the measured time what the neighbour left over).
# Included by ctest after catch_discover_tests has defined the tests (TEST_INCLUDE_FILES).
set_tests_properties("the host CPU projected from its catalog class lands within 2x of the measured gpt small step"
                     PROPERTIES RUN_SERIAL TRUE)
# A memory test whose prediction is an upper bound reached only where every intra-op thread runs at once (the flash
# attention's per-thread buffers): a neighbour on the cores would let the threads run one after another.
set_tests_properties("the attention's per-thread buffers: long sequences, more threads than cores"
                     PROPERTIES RUN_SERIAL TRUE)
