import ContinuumCore
import ContinuumStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which group a command or request acts in: by name or id prefix, or the node's only group.
public enum GroupChoice {
    /// The group named by `text` (its name, or the start of its id); with no text, the only group (the only one this
    /// node is an admin of, with `adminOnly`). Throws a ``StoreError`` that says what to do; `choosing` is how the
    /// caller names a group (`--group` for the CLI, `the field group` for the API).
    public static func resolve(
        _ text: String?,
        in store: ContinuumStore,
        adminOnly: Bool = false,
        choosing: String = "--group"
    ) async throws -> GroupID {
        let groups = try await store.groups().filter { !adminOnly || $0.admin }
        guard let text else {
            if groups.count == 1 { return groups[0].id }
            if groups.isEmpty {
                throw StoreError(
                    .notFound,
                    adminOnly
                        ? "this node is an admin of no group; create one with 'continuum-node group create NAME'"
                        : "this node belongs to no group; create one with 'continuum-node group create NAME' or "
                            + "join one with 'continuum-node join CODE'"
                )
            }
            throw StoreError(
                .ambiguous,
                "this node is in \(groups.count) groups; choose one with \(choosing): \(names(groups))"
            )
        }
        do {
            return try IDLookup.resolve(text, among: groups.map { IDCandidate($0, ids: [$0.id], name: $0.name) }).id
        } catch {
            switch error {
            case .notAnID where text.isEmpty:
                throw StoreError(.invalidInput, error.description)
            case .notAnID, .notFound:
                // Not hex: most likely a mistyped name, so the names are what helps.
                throw StoreError(
                    .notFound,
                    "no group of this node is called or starts with '\(text)'; its groups: \(names(groups))"
                )
            case .ambiguous(_, let matches):
                throw StoreError(
                    .ambiguous,
                    "'\(text)' matches \(matches.count) groups: \(names(matches.map(\.value))); give more of the id"
                )
            }
        }
    }

    static func names(_ groups: [GroupSummary]) -> String {
        groups.isEmpty ? "none" : groups.map { "\($0.name ?? "?") (\($0.id.short))" }.joined(separator: ", ")
    }
}

/// This machine's addresses on the LAN, as an invite carries them.
public enum LANAddress {
    /// The first IPv4 address of an interface that is up and not loopback.
    public static func first() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let flags = Int32(entry.pointee.ifa_flags)
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0
            else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(
                address,
                socklen_t(MemoryLayout<sockaddr_in>.size),
                &host,
                socklen_t(host.count),
                nil,
                0,
                NI_NUMERICHOST
            ) == 0 {
                return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return nil
    }
}

extension InviteTicket {
    /// The code a joiner types or scans: this node's id prefix, the secret, and where the joiner dials.
    public func code(of identity: NodeIdentity, host: String, port: Int) -> InviteCode {
        InviteCode(
            nodePrefix: Data(identity.node.bytes.prefix(InviteCode.nodePrefixBytes)),
            secret: secret,
            host: host,
            port: port
        )
    }
}
