// Node's HTTP/1.1 parser, from Debian's libhttp-parser-dev.
#include <http_parser.h>
