"""sitemap-updater: event-driven, byte-stable XML sitemaps for large sites."""

__version__ = "0.1.0"
