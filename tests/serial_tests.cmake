# Tests that run alone (ctest -j runs the others side by side). Included by ctest after catch_discover_tests has
# defined the tests (TEST_INCLUDE_FILES).
# A memory test whose prediction is an upper bound reached only where every intra-op thread runs at once (the flash
# attention's per-thread buffers): a neighbour on the cores would let the threads run one after another.
set_tests_properties("the attention's per-thread buffers: long sequences, more threads than cores"
                     PROPERTIES RUN_SERIAL TRUE)
# ... and the same tests under every kind of CPU emulated, at 1 and 4 threads and with the bookings off.
set_tests_properties("the [serial] [cpu-kinds] tests on every kind emulated, at 1 and 4 threads, with the bookings off"
                     PROPERTIES RUN_SERIAL TRUE)
