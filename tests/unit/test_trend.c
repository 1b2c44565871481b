/* The trend classification of a series (heapdiff over 3+ snapshots). */
#include <stdio.h>

#include "analyzers/diff.h"
#include "tests/unit/check.h"


static void expect(const char *what, const uint64_t *v, size_t n, enum hs_trend want)
{
	double slope;
	enum hs_trend got = hs_trend_of(v, n, &slope);
	check_count++;
	if (got != want) {
		check_failures++;
		fprintf(stderr, "%s: %s, expected %s\n", what, hs_trend_names[got],
			hs_trend_names[want]);
	}
}

int main(void)
{
	uint64_t grow[] = {100, 200, 300, 400};
	uint64_t plateau[] = {100, 200, 300, 300};
	uint64_t plateau_noise[] = {1000, 2000, 2005, 2001};
	uint64_t stable[] = {1000, 1010, 995, 1001};
	uint64_t saw[] = {100, 400, 100, 400};
	uint64_t shrink[] = {400, 300, 300, 100};
	uint64_t two[] = {100, 200};
	uint64_t zeros[] = {0, 0, 0};
	expect("growing", grow, 4, HS_TREND_GROWING);
	expect("plateau", plateau, 4, HS_TREND_PLATEAU);
	expect("plateau within noise", plateau_noise, 4, HS_TREND_PLATEAU);
	expect("stable", stable, 4, HS_TREND_STABLE);
	expect("sawtooth", saw, 4, HS_TREND_SAWTOOTH);
	expect("shrinking", shrink, 4, HS_TREND_SHRINKING);
	expect("two snapshots", two, 2, HS_TREND_NONE);
	expect("all zero", zeros, 3, HS_TREND_STABLE);
	double slope;
	hs_trend_of(grow, 4, &slope);
	check_count++;
	if (slope < 99.999 || slope > 100.001) {
		check_failures++;
		fprintf(stderr, "slope of 100 per snapshot: %f\n", slope);
	}
	return check_finish();
}
