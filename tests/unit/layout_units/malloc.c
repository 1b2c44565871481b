/* The unit named malloc.c of tests/unit/test_layout_units.c's data: the
 * struct malloc_state malloc's unit defines, after first.c's. */
struct malloc_state {
	long mutex;
	long flags;
};

struct malloc_state main_arena;
extern struct malloc_state first_state;

int main(void)
{
	return (int)main_arena.flags + (int)sizeof(first_state);
}
