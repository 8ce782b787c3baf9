#include "dwz_book.h"

long book_b(struct book *b, long v)
{
	long s = 0;
	for (struct account *a = b->head; a; a = a->next)
		s += credit(a, v * 3);
	return s;
}
