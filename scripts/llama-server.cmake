# Passed to llama-cpp-python's build as CMAKE_PROJECT_INCLUDE by scripts/install.sh, so that the one compile of
# llama.cpp that llama-cpp-python needs also yields llama.cpp's own server (llama-server), from the same vendored
# sources, for pagemind's shared model process -- and nothing else: llama.cpp's other tools (benchmarks, quantize,
# CLIs...), which LLAMA_BUILD_TOOLS adds beside the server, are left out of the build.
#
# CMake includes this file after every project() call; the work is deferred to the end of the top-level
# CMakeLists, once every target exists, and done once.
get_property(_pagemind_done GLOBAL PROPERTY PAGEMIND_LLAMA_SERVER_SETUP)
if(NOT _pagemind_done)
  set_property(GLOBAL PROPERTY PAGEMIND_LLAMA_SERVER_SETUP TRUE)

  # Every target of llama.cpp's tools/ but llama-server leaves the default build: what the server links (its
  # libraries, mtmd, the UI stub, cpp-httplib) is still built, as a dependency; the other tools are not.
  function(pagemind_skip_tools dir)
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      if(NOT target STREQUAL "llama-server")
        set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
      endif()
    endforeach()
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(sub IN LISTS subdirs)
      pagemind_skip_tools("${sub}")
    endforeach()
  endfunction()

  function(pagemind_llama_server)
    if(NOT TARGET llama-server)
      message(FATAL_ERROR "pagemind: llama-server is not a target (LLAMA_BUILD_TOOLS and LLAMA_BUILD_SERVER must be ON)")
    endif()
    pagemind_skip_tools("${CMAKE_SOURCE_DIR}/vendor/llama.cpp/tools")
    # The server's own library is installed only with LLAMA_TOOLS_INSTALL (which would install every tool): here,
    # beside the other shared libraries; the executable finds them through LD_LIBRARY_PATH (pagemind sets it).
    install(TARGETS llama-server-impl LIBRARY DESTINATION lib)
  endfunction()

  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL pagemind_llama_server)
endif()
