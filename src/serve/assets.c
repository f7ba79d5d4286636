#include <string.h>

#include "common/array.h"
#include "serve/assets.h"

const struct serve_asset *serve_asset_find(const char *name)
{
    for (size_t i = 0; i < serve_assets_count; i++)
        if (strcmp(serve_assets[i].name, name) == 0)
            return &serve_assets[i];
    return NULL;
}

const char *serve_asset_type(const char *name)
{
    static const struct {
        const char *ext;
        const char *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".map", "application/json"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < ARRAY_SIZE(types); i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}
