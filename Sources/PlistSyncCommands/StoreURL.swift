/// The `--store` URL of a PostgreSQL store.
enum StoreURL {
    static func isPostgres(_ url: String) -> Bool {
        url.hasPrefix("postgresql://") || url.hasPrefix("postgres://")
    }

}
