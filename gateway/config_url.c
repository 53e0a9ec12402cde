/*
 * config_url: a provider's base_url and shared_state's Redis URL, checked
 * with libcurl's own URL parser (so the host checked is the host connected
 * to) and held to loopback unless --allow-remote.
 */
#include "gateway/config_int.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "common/opt.h"

/* The host of a URL is loopback: "localhost", 127.0.0.0/8 or ::1. */
static bool host_is_loopback(const char *host)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		return opt_addr_is_loopback((struct sockaddr *)&ss);
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		return opt_addr_is_loopback((struct sockaddr *)&ss);
	}
	return false;
}

/*
 * A URL as an error message may show it: quoted, or not at all when it has
 * an '@' (a user or password, which the message must not carry).
 */
static const char *url_shown(const char *url, char *out, size_t len)
{
	if (strchr(url, '@'))
		snprintf(out, len, "a URL with '@' in it (not shown)");
	else
		snprintf(out, len, "\"%.100s\"", url);
	return out;
}

/* The host is an IPv4 or IPv6 address, not a name. */
static bool host_is_numeric(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
}

/* A URL part as libcurl's parser sees it (free with curl_free), or NULL. */
static char *url_part(CURLU *u, CURLUPart what)
{
	char *v = NULL;

	if (curl_url_get(u, what, &v, 0) != CURLUE_OK)
		return NULL;
	return v;
}

/*
 * Checks a base URL with libcurl's own parser, so the host checked is the
 * host connected to: http:// or https://, a host, no user or password, no
 * query or fragment; loopback unless allow_remote. Fills p->base_url (no
 * trailing '/') and p->chat_url (for p->dialect, set already).
 */
int gw_config__base_url(const char *url, bool allow_remote, struct gw_provider *p,
			  const char *file, const char *path, char *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	char *host = NULL;
	char *extra = NULL;
	const char *tail;
	char bare[256];
	char shown[128];
	size_t len;
	int rc = 0;

	if (!u)
		return cfg_error(err, file, path, "base_url", "out of memory");
	url_shown(url, shown, sizeof(shown));
	if (strpbrk(url, " \t\r\n\\") ||
	    curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL such as http://127.0.0.1:9001/v1, got %s", shown);
		goto out;
	}
	scheme = url_part(u, CURLUPART_SCHEME);
	host = url_part(u, CURLUPART_HOST);
	if (!scheme || (strcmp(scheme, "http") && strcmp(scheme, "https")) ||
	    (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected an http:// or https:// URL, got %s", shown);
		goto out;
	}
	if (!host || !host[0]) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL with a host, got %s", shown);
		goto out;
	}
	extra = url_part(u, CURLUPART_USER);
	if (!extra)
		extra = url_part(u, CURLUPART_PASSWORD);
	if (extra) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL without a user or password (use api_key_env), "
			       "got %s", shown);
		goto out;
	}
	extra = url_part(u, CURLUPART_QUERY);
	if (!extra)
		extra = url_part(u, CURLUPART_FRAGMENT);
	if (extra) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL without a query or fragment, got %s", shown);
		goto out;
	}
	/* An IPv6 host comes back in brackets. */
	len = strlen(host);
	if (host[0] == '[' && len > 2 && host[len - 1] == ']')
		snprintf(bare, sizeof(bare), "%.*s", (int)(len - 2), host + 1);
	else
		snprintf(bare, sizeof(bare), "%s", host);
	if (!allow_remote && !host_is_loopback(bare)) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a loopback host (127.0.0.0/8, ::1 or localhost) without "
			       "--allow-remote, got \"%.100s\"", host);
		goto out;
	}
	len = strlen(url);
	while (len > 0 && url[len - 1] == '/')
		len--;
	p->base_url = strndup(url, len);
	tail = p->dialect == GW_DIALECT_ANTHROPIC ? "/messages" : "/chat/completions";
	p->chat_url = malloc(len + strlen(tail) + 1);
	if (!p->base_url || !p->chat_url) {
		rc = cfg_error(err, file, path, "base_url", "out of memory");
		goto out;
	}
	memcpy(p->chat_url, url, len);
	memcpy(p->chat_url + len, tail, strlen(tail) + 1);
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(extra);
	curl_url_cleanup(u);
	return rc;
}

int gw_config__redis_url(const char *url, bool allow_remote, struct gw_shared *s,
			 const char *file, char *err)
{
	static const char *const path = "shared_state";
	char shown[128];
	CURLU *u = curl_url();
	char *scheme = NULL;
	char *host = NULL;
	char *port = NULL;
	char *upath = NULL;
	char *extra = NULL;
	char bare[256];
	char *end;
	size_t len;
	long v;
	int rc = 0;

	if (!u)
		return cfg_error(err, file, path, "url", "out of memory");
	url_shown(url, shown, sizeof(shown));
	if (strpbrk(url, " \t\r\n\\") || strncmp(url, "redis://", 8) ||
	    curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		rc = cfg_error(err, file, path, "url",
			       "expected a URL such as redis://127.0.0.1:6379/0, got %s", shown);
		goto out;
	}
	scheme = url_part(u, CURLUPART_SCHEME);
	host = url_part(u, CURLUPART_HOST);
	extra = url_part(u, CURLUPART_USER);
	if (!extra)
		extra = url_part(u, CURLUPART_PASSWORD);
	if (extra) {
		rc = cfg_error(err, file, path, "url",
			       "expected a URL without a user or password (name the variable "
			       "holding the password in shared_state.password_env)");
		goto out;
	}
	extra = url_part(u, CURLUPART_QUERY);
	if (!extra)
		extra = url_part(u, CURLUPART_FRAGMENT);
	if (!scheme || strcmp(scheme, "redis") || !host || !host[0] || extra) {
		rc = cfg_error(err, file, path, "url",
			       "expected redis://HOST[:PORT][/DB] without a query or fragment, "
			       "got %s", shown);
		goto out;
	}
	len = strlen(host);
	if (host[0] == '[' && len > 2 && host[len - 1] == ']')
		snprintf(bare, sizeof(bare), "%.*s", (int)(len - 2), host + 1);
	else
		snprintf(bare, sizeof(bare), "%s", strcmp(host, "localhost") ? host : "127.0.0.1");
	if (!host_is_numeric(bare)) {
		rc = cfg_error(err, file, path, "url",
			       "expected a numeric host (an IPv4 or IPv6 address, or localhost: "
			       "no name is looked up), got \"%.100s\"", host);
		goto out;
	}
	if (!allow_remote && !host_is_loopback(bare)) {
		rc = cfg_error(err, file, path, "url",
			       "expected a loopback host (127.0.0.0/8, ::1 or localhost) without "
			       "--allow-remote, got \"%.100s\"", host);
		goto out;
	}
	port = url_part(u, CURLUPART_PORT);
	s->port = 6379;
	if (port) {
		v = strtol(port, &end, 10);
		if (*end || v < 1 || v > 65535) {
			rc = cfg_error(err, file, path, "url",
				       "expected a port from 1 to 65535, got \"%.100s\"", port);
			goto out;
		}
		s->port = (int)v;
	}
	upath = url_part(u, CURLUPART_PATH);
	s->db = 0;
	if (upath && strcmp(upath, "/") && upath[0]) {
		v = strtol(upath + 1, &end, 10);
		if (upath[0] != '/' || !upath[1] || *end || v < 0 || v > 1000000) {
			rc = cfg_error(err, file, path, "url",
				       "expected a database number after the port (/0), got "
				       "\"%.100s\"", upath);
			goto out;
		}
		s->db = (int)v;
	}
	s->host = strdup(bare);
	if (!s->host)
		rc = cfg_error(err, file, path, "url", "out of memory");
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(upath);
	curl_free(extra);
	curl_url_cleanup(u);
	return rc;
}
