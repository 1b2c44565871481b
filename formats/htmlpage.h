/* Self-contained HTML pages: a page template whose "@DATA@" is replaced by
 * JSON (escaped for a <script> element), written through src/outfile. */
#ifndef HS_HTMLPAGE_H
#define HS_HTMLPAGE_H

#include "formats/jsonw.h"
#include "src/error.h"

struct hs_error *hs_html_page_write(const char *page, const char *path,
				    void (*data)(struct hs_jsonw *w, void *arg),
				    void *arg);

#endif
