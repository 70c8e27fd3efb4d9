# Shared compile settings for every vtllm target.
add_library(vtllm_warnings INTERFACE)
target_compile_options(vtllm_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Wall,-Wextra,-Werror>)
# g++ 12 reports false -Wrestrict errors inside libstdc++'s std::string at -O3
# (GCC bug 105329, fixed in 13); the warning stays on for every other compiler.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(vtllm_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()

add_library(vtllm_sanitize INTERFACE)
if(VTLLM_SANITIZE)
  target_compile_options(vtllm_sanitize INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
  target_link_options(vtllm_sanitize INTERFACE -fsanitize=address,undefined)
endif()
if(VTLLM_FUZZ)
  # Library code gets coverage instrumentation; the fuzz executables add the libFuzzer main.
  target_compile_options(vtllm_sanitize INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer>)
  target_link_options(vtllm_sanitize INTERFACE -fsanitize=address,undefined)
endif()

# vtllm_layer(NAME DIR [DEPS ...]): a static library from every .cpp under DIR
# (CUDA sources are added separately by the CUDA backend). Includes are rooted
# at src/, so code says #include "vt/tensor.h".
function(vtllm_layer name dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cpp)
  list(FILTER srcs EXCLUDE REGEX "/cuda/")
  if(NOT srcs)
    # A layer with no code yet: an interface target keeps the dependency graph whole.
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${name} INTERFACE ${ARGN})
    return()
  endif()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${ARGN} PRIVATE vtllm_warnings vtllm_sanitize)
  target_link_libraries(${name} INTERFACE vtllm_sanitize)
endfunction()

# vtllm_test(NAME DIR LIBS...): one gtest executable per test folder, its subfolders
# included (tests/vt/<family>/; faster to link on small machines than one per file),
# every test registered with CTest. DIR is on the include path (shared test headers).
function(vtllm_test name dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*_test.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name} ${srcs})
  target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest GTest::gtest_main vtllm_warnings vtllm_sanitize)
  target_include_directories(${name} PRIVATE ${dir})
  target_compile_definitions(${name} PRIVATE VTLLM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${name})
endfunction()
