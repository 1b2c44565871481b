/* Error objects.
 *
 * Every fallible function returns a struct hs_error * (NULL on success) and
 * puts its results in out-parameters named ret, last.  The caller owns the
 * error and frees it with hs_error_destroy(), which also accepts the static
 * out-of-memory error (never allocated, so it can be returned when allocation
 * itself fails).
 */
#ifndef HS_ERROR_H
#define HS_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

enum hs_error_code {
	HS_ERR_NOMEM = 1,   /* out of memory */
	HS_ERR_IO,          /* open/read/mmap/write failed */
	HS_ERR_FORMAT,      /* input is not what it should be (not ELF, not a core) */
	HS_ERR_TRUNCATED,   /* input ends early */
	HS_ERR_FAULT,       /* target address not present in the dump */
	HS_ERR_NOT_FOUND,   /* symbol, type, module ... not found */
	HS_ERR_NO_DEBUGINFO,/* debug info needed and missing */
	HS_ERR_CORRUPT,     /* target data structures are inconsistent */
	HS_ERR_UNSUPPORTED, /* something we do not (yet) handle */
	HS_ERR_USAGE,       /* bad arguments from the user */
	HS_ERR_DWARF,       /* libdw/libdwfl failure */
};

struct hs_error {
	enum hs_error_code code;
	char *message;      /* one line, no trailing newline */
};

/* The statically allocated out-of-memory error. */
extern struct hs_error hs_error_nomem;

struct hs_error *hs_error_create(enum hs_error_code code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
struct hs_error *hs_error_vcreate(enum hs_error_code code, const char *fmt,
				  va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Message of the form "<context>: strerror(errno)". */
struct hs_error *hs_error_errno(int errnum, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prepends "<context>: " to err's message; returns err (or nomem). */
struct hs_error *hs_error_wrap(struct hs_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hs_error_destroy(struct hs_error *err);

/* An expected miss: when *errp is an error of that code, destroys it,
 * clears *errp and returns true; any other error (out of memory above all)
 * stays in *errp for the caller to return.
 *
 *   err = hs_dwarf_layout(...);
 *   if (hs_error_catch(&err, HS_ERR_NOT_FOUND))
 *           ... the optional thing is absent ...
 *   else if (err)
 *           return err;
 */
static inline bool hs_error_catch(struct hs_error **errp,
				  enum hs_error_code code)
{
	if (!*errp || (*errp)->code != code)
		return false;
	hs_error_destroy(*errp);
	*errp = NULL;
	return true;
}

static inline void hs_error_cleanup(struct hs_error **errp)
{
	hs_error_destroy(*errp);
}
#define HS_AUTO_ERROR __attribute__((cleanup(hs_error_cleanup))) struct hs_error

#endif
