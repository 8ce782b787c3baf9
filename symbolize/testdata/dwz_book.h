/* Types and an always-inline function shared by dwz_main.c and
 * dwz_book.c: dwz moves what the two units repeat into a partial unit
 * that both import, and their references to it become DW_FORM_ref_addr. */
struct account {
	long id;
	long balance;
	const char *owner;
	struct account *next;
};

struct book {
	struct account *head;
	int count;
	double rate;
};

static inline __attribute__((always_inline)) long credit(struct account *a, long v)
{
	a->balance += v;
	return a->balance;
}

long book_a(struct book *b, long v);
long book_b(struct book *b, long v);
