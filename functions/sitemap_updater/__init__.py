"""sitemap-updater: event-driven, byte-stable XML sitemaps for large sites."""

__version__ = "1.0.0"
