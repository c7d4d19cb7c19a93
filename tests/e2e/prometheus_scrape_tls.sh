# prometheus_scrape.sh over HTTPS with a bearer token, no loopback client trusted.
PROM_TLS=1 source "$(dirname "$0")/prometheus_scrape.sh"
