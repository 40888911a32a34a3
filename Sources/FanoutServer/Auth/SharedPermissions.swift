/// A user's permissions, shared by all of that user's connections: each connection holds a reference instead
/// of its own copy (four arrays and a flag, 33 bytes of every connection object).
final class SharedPermissions: Sendable {
    let permissions: Permissions

    init(_ permissions: Permissions) {
        self.permissions = permissions
    }

    /// Everything allowed: every connection of a server without users.
    static let unrestricted = SharedPermissions(.unrestricted)
    /// Nothing allowed: an authenticated connection whose user a reload removed.
    static let nothing = SharedPermissions(Permissions())
}
