/* hs_dwarf_layout_in_unit: a type's layout from the unit of a given name
 * when that unit defines it, else the first definition (hs_dwarf_layout_in).
 * The data is a program of two units that both define struct malloc_state,
 * first.c's first (tests/unit/layout_units/, its path in argv[1]). */
#include "formats/dwarf.h"
#include "tests/unit/check.h"

#include <elfutils/libdw.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Whether the layout of name found by unit (NULL: the first definition)
 * has member `member`, and the search succeeded. */
static bool layout_has(Dwarf *dbg, const char *unit, const char *name,
		       const char *member)
{
	struct hs_layout l;
	struct hs_error *err = unit ? hs_dwarf_layout_in_unit(dbg, unit, name, &l) :
				      hs_dwarf_layout_in(dbg, name, &l);
	if (err) {
		hs_error_destroy(err);
		return false;
	}
	err = hs_layout_member(&l, member, NULL, NULL);
	hs_layout_fini(&l);
	bool has = !err;
	hs_error_destroy(err);
	return has;
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	int fd = argc == 2 ? open(argv[1], O_RDONLY) : -1;
	Dwarf *dbg = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	CHECKF(dbg, "no DWARF in %s", argc == 2 ? argv[1] : "(none)");
	if (!dbg)
		return check_finish();
	/* the first definition is first.c's */
	CHECK(layout_has(dbg, NULL, "struct malloc_state", "first_only"));
	/* malloc.c's, asked by its name */
	CHECK(layout_has(dbg, "malloc.c", "struct malloc_state", "flags"));
	CHECK(!layout_has(dbg, "malloc.c", "struct malloc_state", "first_only"));
	/* a unit of no such name, or a part of a name: the first definition */
	CHECK(layout_has(dbg, "arena.c", "struct malloc_state", "first_only"));
	CHECK(layout_has(dbg, "alloc.c", "struct malloc_state", "first_only"));
	/* a type the named unit does not define: none anywhere */
	struct hs_layout l;
	struct hs_error *err = hs_dwarf_layout_in_unit(dbg, "malloc.c", "struct heap_info", &l);
	CHECK(err && err->code == HS_ERR_NOT_FOUND);
	hs_error_destroy(err);
	dwarf_end(dbg);
	close(fd);
	return check_finish();
}
