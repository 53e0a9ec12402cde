/*
 * config_url: a provider's base_url, checked with libcurl's own URL
 * parser (so the host checked is the host connected to) and held to
 * loopback unless --allow-remote.
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
 * trailing '/') and p->chat_url.
 */
int gw_config__base_url(const char *url, bool allow_remote, struct gw_provider *p,
			  const char *file, const char *path, char *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	char *host = NULL;
	char *extra = NULL;
	char bare[256];
	size_t len;
	int rc = 0;

	if (!u)
		return cfg_error(err, file, path, "base_url", "out of memory");
	if (strpbrk(url, " \t\r\n\\") ||
	    curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL such as http://127.0.0.1:9001/v1, got \"%.100s\"", url);
		goto out;
	}
	scheme = url_part(u, CURLUPART_SCHEME);
	host = url_part(u, CURLUPART_HOST);
	if (!scheme || (strcmp(scheme, "http") && strcmp(scheme, "https")) ||
	    (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected an http:// or https:// URL, got \"%.100s\"", url);
		goto out;
	}
	if (!host || !host[0]) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL with a host, got \"%.100s\"", url);
		goto out;
	}
	extra = url_part(u, CURLUPART_USER);
	if (!extra)
		extra = url_part(u, CURLUPART_PASSWORD);
	if (extra) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL without a user or password (use api_key_env), "
			       "got \"%.100s\"", url);
		goto out;
	}
	extra = url_part(u, CURLUPART_QUERY);
	if (!extra)
		extra = url_part(u, CURLUPART_FRAGMENT);
	if (extra) {
		rc = cfg_error(err, file, path, "base_url",
			       "expected a URL without a query or fragment, got \"%.100s\"", url);
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
	p->chat_url = malloc(len + sizeof("/chat/completions"));
	if (!p->base_url || !p->chat_url) {
		rc = cfg_error(err, file, path, "base_url", "out of memory");
		goto out;
	}
	memcpy(p->chat_url, url, len);
	memcpy(p->chat_url + len, "/chat/completions", sizeof("/chat/completions"));
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(extra);
	curl_url_cleanup(u);
	return rc;
}
