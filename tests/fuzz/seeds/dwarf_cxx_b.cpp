// Seed for fuzz_dwarf: the definition of shop::Cart, which
// dwarf_cxx_a.cpp only declares (an incomplete type completed by name).
namespace shop {
class Item;
struct Cart {
	Item *items[8];
	Cart *parent;
	unsigned long count;
};
} // namespace shop

shop::Cart the_cart;
