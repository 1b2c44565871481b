# C++ container fixtures (tests/fixtures/cx_*.cpp), checked by
# test_cxx_containers.py:
#
#   cx_containers  vectors, strings, unordered maps and sets, maps and sets,
#                  deques of recorded sizes and capacities: `containers`
#   cx_oom         a std::map<long, Session *> grown until std::bad_alloc
#                  under a limit on its address space: kernel core, `types`
#
# Compiled with the C++ compiler directly, as ty_cxx (types.cmake).
find_program(HS_CXX_FOR_CX NAMES g++ c++)
set(HS_CX_DIR ${CMAKE_CURRENT_BINARY_DIR}/fixtures)
if(HS_CXX_FOR_CX)
  foreach(cx cx_containers cx_oom)
    add_custom_command(
      OUTPUT ${HS_CX_DIR}/${cx}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${HS_CX_DIR}
      COMMAND ${HS_CXX_FOR_CX} -O1 -g -fno-omit-frame-pointer
              -Wall -Wextra -Werror
              -I${CMAKE_CURRENT_SOURCE_DIR}/fixtures
              ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/${cx}.cpp
              -o ${HS_CX_DIR}/${cx}
      DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/${cx}.cpp
              ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/rec_out.h
      COMMENT "Building the C++ container fixture ${cx}"
      VERBATIM)
  endforeach()
  add_custom_target(cx_fixtures ALL
    DEPENDS ${HS_CX_DIR}/cx_containers ${HS_CX_DIR}/cx_oom)
else()
  message(STATUS "No C++ compiler: the C++ container fixtures are not built "
                 "(test_cxx_containers.py skips them)")
endif()

hs_pytest(cxx_containers test_cxx_containers.py)
