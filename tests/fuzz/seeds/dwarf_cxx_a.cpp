// Seed for fuzz_dwarf: C++ classes for formats/dwtypes.c (namespaces,
// inheritance, virtual functions, arrays of pointers, a class declared
// here and defined in dwarf_cxx_b.cpp).  Built by tests/fuzz/make-seeds.sh.
namespace shop {
struct Cart;

class Item {
public:
	virtual ~Item() {}
	long price;
	Item *next;
};

class Book : public Item {
public:
	const char *title;
	Item *related[4];
	unsigned flags : 3;
};
} // namespace shop

struct Session {
	shop::Cart *cart;
	char *name;
	shop::Book books[2];
	int matrix[2][3];
	shop::Item *grid[2][2];
};

Session *the_session;
static shop::Book *g_book;

long session_total(Session *s)
{
	shop::Book local;
	local.next = g_book;
	long n = local.price;
	for (int i = 0; i < 2; i++)
		n += s->books[i].price;
	return n;
}
