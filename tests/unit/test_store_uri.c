/*
 * Store URIs without a server: which backend a URI names, the URI less its
 * password (store/uri.c), and libpq's connection errors as one line
 * (postgres.c's pg_connect_error_line).
 */
#include <string.h>

#include "common/array.h"
#include "store/backend.h"
#include "store/store.h"
#include "test.h"

static void redacts_to(const char *uri, const char *want)
{
    struct strbuf sb;
    strbuf_init(&sb);
    ASSERT_EQ_INT(store_uri_redact(uri, &sb), 0);
    ASSERT_EQ_STR(sb.buf, want);
    ASSERT_EQ_INT(store_uri_has_password(uri), strcmp(uri, want) != 0);
    strbuf_release(&sb);
}

TEST(postgres_schemes_are_told_from_paths)
{
    ASSERT(store_uri_is_postgres("postgresql://h/db"));
    ASSERT(store_uri_is_postgres("postgres://h/db"));
    ASSERT(!store_uri_is_postgres("strobe.db"));
    ASSERT(!store_uri_is_postgres("./postgresql://x")); /* a file so named */
    ASSERT(!store_uri_is_postgres("postgresql:/h/db"));
    ASSERT(!store_uri_is_postgres(NULL));
}

TEST(password_in_user_info_is_dropped)
{
    redacts_to("postgresql://strobe:s3cret@127.0.0.1:5432/strobe",
               "postgresql://strobe@127.0.0.1:5432/strobe");
    redacts_to("postgres://u:p@h/db", "postgres://u@h/db");
    redacts_to("postgresql://u:@h/db", "postgresql://u@h/db");
    redacts_to("postgresql://:pw@h/db", "postgresql://@h/db");
    /* libpq ends the user info at the first '@': the rest is the host */
    redacts_to("postgresql://u:a:b?c@h1:1,h2:2/db?sslmode=require",
               "postgresql://u@h1:1,h2:2/db?sslmode=require");
    redacts_to("postgresql://u:p%40ss@h/db", "postgresql://u@h/db");
}

TEST(password_parameter_is_dropped)
{
    redacts_to("postgresql://u@h/db?password=pw", "postgresql://u@h/db");
    redacts_to("postgresql://u@h/db?sslmode=require&password=pw&connect_timeout=3",
               "postgresql://u@h/db?sslmode=require&connect_timeout=3");
    redacts_to("postgresql://u@h/db?password=a&password=b&x=1", "postgresql://u@h/db?x=1");
    redacts_to("postgresql://u:p@h/db?password=pw", "postgresql://u@h/db");
    /* a parameter that only ends in password is not it */
    redacts_to("postgresql://h/db?sslpassword=k", "postgresql://h/db?sslpassword=k");
}

TEST(uris_without_password_are_kept)
{
    redacts_to("postgresql://", "postgresql://");
    redacts_to("postgresql://h", "postgresql://h");
    redacts_to("postgresql:///db?host=/run/postgresql", "postgresql:///db?host=/run/postgresql");
    redacts_to("postgresql://u@h:5432/db", "postgresql://u@h:5432/db");
    /* a '/' before any '@' ends the authority: no user info there */
    redacts_to("postgresql://h/db@x:y", "postgresql://h/db@x:y");
    redacts_to("/tmp/a:b@c/strobe.db", "/tmp/a:b@c/strobe.db");
    redacts_to("strobe.db", "strobe.db");
}

static void error_line_is(const char *msg, const char *secret, const char *want)
{
    const char *secrets[] = {secret};
    struct strbuf sb;
    strbuf_init(&sb);
    pg_connect_error_line(msg, secrets, ARRAY_SIZE(secrets), &sb);
    ASSERT_EQ_STR(sb.buf, want);
    strbuf_release(&sb);
}

TEST(connect_errors_are_one_line)
{
    error_line_is("connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  password "
                  "authentication failed for user \"strobe\"\n",
                  NULL, "password authentication failed for user \"strobe\"");
    error_line_is("connection to server at \"127.0.0.1\", port 5439 failed: Connection refused\n"
                  "\tIs the server running on that host and accepting TCP/IP connections?\n",
                  "", "Connection refused");
    error_line_is("connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: FATAL:  "
                  "database \"nosuch\" does not exist\n",
                  NULL, "database \"nosuch\" does not exist");
    error_line_is("invalid URI query parameter: \"bogus\"\n", NULL,
                  "invalid URI query parameter: \"bogus\"");
    error_line_is("", NULL, "unknown error");
    error_line_is(NULL, NULL, "unknown error");
}

TEST(connect_errors_never_show_the_password)
{
    error_line_is("invalid percent-encoded token: \"s3%zzcret\"\n", "s3%zzcret",
                  "invalid percent-encoded token: \"***\"");
    error_line_is("x pw y pw\n", "pw", "x *** y ***");
}

TEST_MAIN(postgres_schemes_are_told_from_paths, password_in_user_info_is_dropped,
          password_parameter_is_dropped, uris_without_password_are_kept,
          connect_errors_are_one_line, connect_errors_never_show_the_password)
