# Type inference fixtures (tests/fixtures/ty_*): programs that build heaps of
# known C and C++ types, record every block with the type heapsift must give
# it (tests/fixtures/reach_record.c, the expected type in each label) and
# stop themselves.  test_types.py compares `list`, `types`, `show` and
# `leaks` with the record.
#
#   ty_c             C: types through DWARF from globals, statics and TLS
#   ty_cxx           C++: vtables, DWARF for C++ classes
#   ty_cxx_stripped  ty_cxx after strip --strip-all: only RTTI names classes
#   ty_leaks         C: leaked structs, typed from their contents

hs_fixture(ty_c fixtures/ty_c.c fixtures/ty_c_other.c fixtures/reach_record.c)
target_compile_options(ty_c PRIVATE -Wall -Wextra -Werror)
hs_fixture(ty_leaks fixtures/ty_leaks.c fixtures/reach_record.c)
target_compile_options(ty_leaks PRIVATE -Wall -Wextra -Werror)

# The project enables C only, so the C++ fixture is compiled by calling the
# C++ compiler directly (same flags as hs_fixture), with the recorder
# compiled as C in the same command.
find_program(HS_CXX_FOR_FIXTURES NAMES g++ c++)
find_program(HS_STRIP_FOR_FIXTURES NAMES strip)
set(HS_TY_DIR ${CMAKE_CURRENT_BINARY_DIR}/fixtures)
if(HS_CXX_FOR_FIXTURES AND HS_STRIP_FOR_FIXTURES)
  add_custom_command(
    OUTPUT ${HS_TY_DIR}/ty_cxx ${HS_TY_DIR}/ty_cxx_stripped
    COMMAND ${CMAKE_COMMAND} -E make_directory ${HS_TY_DIR}
    COMMAND ${HS_CXX_FOR_FIXTURES} -O1 -g -fno-omit-frame-pointer
            -Wall -Wextra -Werror -pthread
            -I${CMAKE_CURRENT_SOURCE_DIR}/fixtures
            -x c++ ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/ty_cxx.cpp
            -x c ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/reach_record.c
            -x none -o ${HS_TY_DIR}/ty_cxx
    COMMAND ${HS_STRIP_FOR_FIXTURES} --strip-all -o ${HS_TY_DIR}/ty_cxx_stripped
            ${HS_TY_DIR}/ty_cxx
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/ty_cxx.cpp
            ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/reach_record.c
            ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/reach_record.h
    COMMENT "Building the C++ type fixtures ty_cxx and ty_cxx_stripped"
    VERBATIM)
  add_custom_target(ty_cxx_fixtures ALL
    DEPENDS ${HS_TY_DIR}/ty_cxx ${HS_TY_DIR}/ty_cxx_stripped)
else()
  message(STATUS "No C++ compiler or strip: the C++ type fixtures are not built "
                 "(test_types.py skips them)")
endif()

hs_pytest(types test_types.py)
