# Tests that run alone (ctest -j runs the others side by side). Included by ctest after catch_discover_tests has
# defined the tests (TEST_INCLUDE_FILES).
# A memory test whose prediction is an upper bound reached only where every intra-op thread runs at once (the flash
# attention's per-thread buffers): a neighbour on the cores would let the threads run one after another.
set_tests_properties("the attention's per-thread buffers: long sequences, more threads than cores"
                     PROPERTIES RUN_SERIAL TRUE)
# ... and the same tests under every kind of CPU emulated, at 1 and 4 threads and with the bookings off.
set_tests_properties("the [serial] [cpu-kinds] tests on every kind emulated, at 1 and 4 threads, with the bookings off"
                     PROPERTIES RUN_SERIAL TRUE)
# The [isa-limit] entries run the [cpu-kinds] tests again in child processes, each at 2 intra-op threads: two of them
# side by side would put four spinning OpenMP threads on 2 cores (the AVX2 one, 100 s alone on an AMX Xeon, passed
# 300 s beside another). Each holds 2 of ctest's -j slots, and has 600 s.
foreach(kind "on an AVX2 CPU, emulated (ONEDNN_MAX_CPU_ISA=AVX2)"
             "on AVX-512 without avx512_bf16, emulated (ONEDNN_MAX_CPU_ISA=AVX512_CORE)"
             "on AVX-512 with avx512_bf16 and no AMX, emulated (ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16)"
             "at 1 and 4 intra-op threads (the suite runs at 2)"
             "with oneDNN's bookings off: the configurations written out")
  set_tests_properties("the [cpu-kinds] tests ${kind}" PROPERTIES PROCESSORS 2 TIMEOUT 600)
endforeach()
