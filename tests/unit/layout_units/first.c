/* The first unit of tests/unit/test_layout_units.c's data: a struct
 * malloc_state of its own, before malloc.c's. */
struct malloc_state {
	int first_only;
};

struct malloc_state first_state;
