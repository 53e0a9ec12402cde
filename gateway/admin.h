/*
 * admin: the gateway's read-only views — /v1/models, /admin/breakers and
 * the Prometheus /metrics text — built from its state into a buffer.
 */
#ifndef FAULTLINE_GATEWAY_ADMIN_H
#define FAULTLINE_GATEWAY_ADMIN_H

#include "common/buf.h"

struct gateway;

/* GET /v1/models: the aliases. Returns 0 or -ENOMEM. */
int admin_models(const struct gateway *gw, struct buf *b);

/* GET /admin/breakers at now_ms. Returns 0 or -ENOMEM. */
int admin_breakers(const struct gateway *gw, struct buf *b, double now_ms);

/* GET /metrics at now_ms. Returns 0 or -ENOMEM. */
int admin_metrics(const struct gateway *gw, struct buf *b, double now_ms);

#endif
