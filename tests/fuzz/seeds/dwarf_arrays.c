/* Seed for fuzz_dwarf: arrays for formats/dwtypes.c's pointer slots and
 * member names (arrays of pointers, arrays of arrays with and without
 * pointers, a flexible array member, bit fields, a union, a self-reference).
 * Built by tests/fuzz/make-seeds.py. */
struct node {
	struct node *next;
	struct node *kids[4];
	int flags : 3;
	int depth : 5;
};

struct grid {
	long cells[8][8][8];
	struct node *corners[2][2][2];
	union {
		struct node *n;
		long raw;
	} u;
	struct grid *self;
	unsigned n;
	struct node *tail[];
};

struct grid g_grid;
struct node *g_roots[3][5];
struct grid *g_grid_ptr;

long grid_sum(struct grid *g)
{
	struct node *local[2][3] = {{0}};
	long s = 0;
	for (int i = 0; i < 8; i++)
		s += g->cells[i][i][i] + (local[1][2] != 0);
	return s;
}
