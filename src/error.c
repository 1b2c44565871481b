#include "src/error.h"
#include "src/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Never freed and never written: hs_error_destroy() recognises it. */
struct hs_error hs_error_nomem = {
	.code = HS_ERR_NOMEM,
	.message = (char *)"out of memory",
};

struct hs_error *hs_error_vcreate(enum hs_error_code code, const char *fmt,
				  va_list ap)
{
	struct hs_error *err = hs_malloc(sizeof(*err));
	if (!err)
		return &hs_error_nomem;
	err->code = code;
	if (vasprintf(&err->message, fmt, ap) < 0) {
		free(err);
		return &hs_error_nomem;
	}
	return err;
}

struct hs_error *hs_error_create(enum hs_error_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct hs_error *err = hs_error_vcreate(code, fmt, ap);
	va_end(ap);
	return err;
}

struct hs_error *hs_error_errno(int errnum, const char *fmt, ...)
{
	char *ctx;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&ctx, fmt, ap);
	va_end(ap);
	if (r < 0)
		return &hs_error_nomem;
	enum hs_error_code code = errnum == ENOMEM ? HS_ERR_NOMEM : HS_ERR_IO;
	struct hs_error *err = hs_error_create(code, "%s: %s", ctx,
					       strerror(errnum));
	free(ctx);
	return err;
}

struct hs_error *hs_error_wrap(struct hs_error *err, const char *fmt, ...)
{
	if (!err || err == &hs_error_nomem)
		return err;
	char *ctx, *msg;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&ctx, fmt, ap);
	va_end(ap);
	if (r < 0)
		return err;
	if (asprintf(&msg, "%s: %s", ctx, err->message) >= 0) {
		free(err->message);
		err->message = msg;
	}
	free(ctx);
	return err;
}

void hs_error_destroy(struct hs_error *err)
{
	if (!err || err == &hs_error_nomem)
		return;
	free(err->message);
	free(err);
}
