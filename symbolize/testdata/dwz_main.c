#include <stdio.h>
#include <stdlib.h>

#include "dwz_book.h"

long book_a(struct book *b, long v)
{
	long s = 0;
	for (struct account *a = b->head; a; a = a->next)
		s += credit(a, v);
	return s;
}

int main(int argc, char **argv)
{
	struct account x = {1, 2, "x", 0};
	struct book b = {&x, 1, 0.5};
	long v = argc > 1 ? atol(argv[1]) : 1;
	printf("%ld %ld\n", book_a(&b, v), book_b(&b, v));
	return 0;
}
