# Finds every dependency of tvie, each from its own ecosystem:
#   LibTorch   from a user's CMAKE_PREFIX_PATH, else from the python named by TVIE_PYTHON
#              (scripts/setup.sh makes a virtual environment with the PyPI torch wheel outside the clone)
#   spdlog, fmt, CLI11, nlohmann_json, Catch2 v2   from Debian packages (scripts/setup.sh installs them)

set(TVIE_PYTHON "" CACHE FILEPATH "A python whose torch package provides LibTorch (used when CMAKE_PREFIX_PATH has none)")

# The PyPI torch wheel is a CUDA build: its CMake config needs the CUDA toolkit (nvcc) even on a CPU machine.
if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "nvcc used by torch's CMake config")
endif()
if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()

# 1. A LibTorch the user gave through CMAKE_PREFIX_PATH takes precedence.
find_package(Torch QUIET)
# 2. Else ask the python (TVIE_PYTHON, else python3 on PATH) where its torch keeps its CMake files.
if(NOT Torch_FOUND)
  set(_tvie_py "${TVIE_PYTHON}")
  if(NOT _tvie_py)
    find_program(_tvie_py NAMES python3 python)
  endif()
  if(_tvie_py)
    execute_process(
      COMMAND "${_tvie_py}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _tvie_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET RESULT_VARIABLE _tvie_rc)
    if(_tvie_rc EQUAL 0 AND _tvie_torch_prefix)
      list(APPEND CMAKE_PREFIX_PATH "${_tvie_torch_prefix}")
    endif()
  endif()
  find_package(Torch QUIET)
endif()
if(NOT Torch_FOUND)
  message(FATAL_ERROR
    "tvie: LibTorch not found. Run scripts/setup.sh (installs torch==2.14.1 into a virtual environment), "
    "or pass -DCMAKE_PREFIX_PATH=<libtorch>/share/cmake or -DTVIE_PYTHON=<python with torch>.")
endif()
message(STATUS "tvie: LibTorch ${Torch_VERSION} from ${TORCH_INSTALL_PREFIX}")

# tvie::torch_deps: everything a target that includes LibTorch headers needs.
add_library(tvie_torch_deps INTERFACE)
add_library(tvie::torch_deps ALIAS tvie_torch_deps)
target_link_libraries(tvie_torch_deps INTERFACE ${TORCH_LIBRARIES})
# tvie's own code is C++17; LibTorch >= 2.10 headers refuse anything older than C++20, so every
# translation unit that includes them is compiled as C++20 (see README, "C++ standard").
target_compile_features(tvie_torch_deps INTERFACE cxx_std_20)
# libstdc++ first among the shared libraries a binary needs: LibTorch 2.11's libtorch.so exports its own copies
# of the std::filesystem operations (remove_all, temp_directory_path ...), and the dynamic linker takes the
# first definition in load order; tvie's calls crashed in libtorch's remove_all. Linked ahead of the torch
# libraries (link options come before them on the command line), libstdc++ is searched first. That kept the
# binding on a CPU machine with the PyPI 2.11 wheel but not on the GPU machine (its test binary still called
# libtorch.so's remove_all, which jumped to address 0: docs/status.md), so the tests no longer call remove_all
# (tests/helpers.hpp, remove_tree; scripts/lint.sh keeps it out).
target_link_options(tvie_torch_deps INTERFACE "LINKER:--push-state,--no-as-needed,-lstdc++,--pop-state")
set(TVIE_WITH_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES OR CUDA_FOUND)
  set(TVIE_WITH_CUDA ON)
endif()
# The wheel's libtorch_cuda.so finds NCCL, cuDNN, cuBLAS ... in site-packages/nvidia/*/lib through its
# RPATH at run time; the linker must look there too, or it picks an older libnccl from the system and
# fails on symbols only the wheel's NCCL has. This keeps tvie on the very NCCL torch loads.
file(GLOB _tvie_nvidia_libdirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
if(_tvie_nvidia_libdirs)
  string(REPLACE ";" ":" _tvie_rpath_link "${_tvie_nvidia_libdirs}")
  target_link_options(tvie_torch_deps INTERFACE "LINKER:-rpath-link,${_tvie_rpath_link}")
endif()

# Distributed training through c10d. ProcessGroupGloo.hpp (in the wheel) includes gloo headers the wheel does
# not ship; scripts/setup.sh fetches them (see there). They must have the store interface of gloo >= 2023
# (has_v2_support): an older gloo (Debian's libgloo-dev) does not compile with the header.
set(TVIE_GLOO_INCLUDE_DIR "" CACHE PATH "gloo headers for c10d's ProcessGroupGloo (scripts/setup.sh fetches them)")
set(TVIE_WITH_GLOO OFF)
foreach(_dir IN ITEMS "${TVIE_GLOO_INCLUDE_DIR}" "${TORCH_INSTALL_PREFIX}/include")
  if(_dir AND EXISTS "${_dir}/gloo/rendezvous/store.h" AND EXISTS "${_dir}/gloo/config.h")
    file(READ "${_dir}/gloo/rendezvous/store.h" _tvie_gloo_store)
    if(_tvie_gloo_store MATCHES "has_v2_support")
      set(TVIE_WITH_GLOO ON)
      set(TVIE_GLOO_HEADERS "${_dir}")
      break()
    endif()
  endif()
endforeach()
if(TVIE_WITH_GLOO)
  message(STATUS "tvie: Gloo backend (c10d ProcessGroupGloo) with gloo headers from ${TVIE_GLOO_HEADERS}")
else()
  message(STATUS "tvie: no usable gloo headers (set TVIE_GLOO_INCLUDE_DIR; scripts/setup.sh fetches them): "
                 "distributed training on CPU is disabled in this build")
endif()
# ProcessGroupNCCL.hpp includes nccl.h: the NCCL torch loads ships it (site-packages/nvidia/nccl/include).
if(TVIE_WITH_CUDA)
  find_path(TVIE_NCCL_INCLUDE_DIR nccl.h HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include" /usr/local/cuda/include
            NO_DEFAULT_PATH)
  if(TVIE_NCCL_INCLUDE_DIR)
    message(STATUS "tvie: NCCL backend (c10d ProcessGroupNCCL) with nccl.h from ${TVIE_NCCL_INCLUDE_DIR}")
  endif()
endif()

find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
if(TVIE_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
