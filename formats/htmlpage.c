/* Self-contained HTML pages: see formats/htmlpage.h. */
#include "formats/htmlpage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/alloc.h"
#include "src/outfile.h"

struct hs_error *hs_html_page_write(const char *page, const char *path,
				    void (*data)(struct hs_jsonw *w, void *arg),
				    void *arg)
{
	struct hs_outfile o;
	FILE *f;
	struct hs_error *err = hs_outfile_fopen(&o, path, &f);
	if (err)
		return err;
	const char *mark = strstr(page, "@DATA@");
	fwrite(page, 1, (size_t)(mark - page), f);
	struct hs_jsonw *w = hs_malloc(sizeof(*w));
	if (w) {
		hs_jsonw_init(w, f, false);
		w->html = true;
		data(w, arg);
		hs_jsonw_finish(w);
		free(w);
	} else {
		err = &hs_error_nomem;
	}
	fputs(mark + strlen("@DATA@"), f);
	if (fclose(f) != 0 && !err)
		err = hs_error_errno(errno, "%s", o.tmp);
	return hs_outfile_finish(&o, err);
}
