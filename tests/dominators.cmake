# Dominator fixtures (tests/fixtures/dm_*.c): each builds structures whose
# dominator tree is known, records every block and every pointer with
# tests/fixtures/reach_record.c and stops itself.  test_dominators.py
# checks retained sizes (list), immediate dominators (dom), root rows and
# leak suspects (top) and retainer paths (path) against the record.

set(HS_DOM_FIXTURES
  dm_shapes
  dm_suspect
  dm_frames
)

foreach(fx ${HS_DOM_FIXTURES})
  hs_fixture(${fx} fixtures/${fx}.c fixtures/reach_record.c)
  target_compile_options(${fx} PRIVATE -Wall -Wextra -Werror)
endforeach()

hs_pytest(dominators test_dominators.py)
