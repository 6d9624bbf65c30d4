import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird
import NIOCore

/// The devices of this node's account (Docs/API.md, "Devices"): the list, and a link code for a new one.
struct DeviceRoutes: Sendable {
    let store: ContinuumStore
    let actions: NodeActions
    let identity: NodeIdentity
    /// The sync port's addresses, as `host:port`.
    let listening: @Sendable () -> [String]

    /// Adds the routes to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        api.get("devices") { _, _ in try json(DeviceListJSON(try await store.devices(of: identity))) }
        api.post("devices/link") { request, context in try await link(request, context: context) }
        api.delete("devices/:id") { _, context in try await remove(context) }
    }

    struct Removed: Encodable {
        let device: AuthorID
        let record: RecordID
        let logs: Int
        let kept: UInt64
    }

    /// Removes a device of this node's account, named by its id or a unique prefix (404 `unknown_device`, 400 for
    /// this device itself).
    func remove(_ context: BasicRequestContext) async throws -> Response {
        let text = try context.parameters.require("id").lowercased()
        let device: DeviceSummary
        do {
            device = try await store.devices(of: identity).device(named: text)
        } catch let error as DeviceLookupError {
            if error.ambiguous { throw APIError(.conflict, "ambiguous_prefix", error.description) }
            throw APIError(.notFound, "unknown_device", error.description)
        }
        let removal = try await storeCall(noun: "device") { try await actions.removeDevice(device.id, by: identity) }
        return try json(Removed(device: device.id, record: removal.record, logs: removal.logs, kept: removal.kept))
    }

    struct LinkBody: Decodable {
        let expiresMinutes: Int?
        let host: String?
    }

    /// A one-time link code for a new device of this node's account, with its QR code; it names this node's sync port
    /// and its LAN address (or `host`).
    func link(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: LinkBody.self, context: context)
        let minutes = try Self.linkMinutes(body.expiresMinutes)
        if let host = body.host, IPv4Address(host) == nil {
            throw APIError.badRequest(
                "host must be an IPv4 address such as 192.168.1.20 (a code carries 4 bytes of address)",
                field: "host"
            )
        }
        let account = try await Self.account(of: identity, in: store)
        let ticket = try await storeCall(noun: "device") {
            try await store.newLinkTicket(lifetime: .seconds(minutes * 60), by: identity)
        }
        let (listenHost, port) = GroupRoutes.syncAddress(listening())
        let host = body.host ?? listenHost ?? LANAddress.first() ?? "127.0.0.1"
        let code = ticket.code(of: identity, host: host, port: port)
        return try json(
            DeviceLinkJSON(code: code, account: account, expiresAt: ticket.expiresAt, qr: true),
            status: .created
        )
    }
}

extension DeviceRoutes {
    /// A link's lifetime in minutes: `expiresMinutes`, 1 … 1440, 10 when absent; else 400 on that field.
    static func linkMinutes(_ expiresMinutes: Int?) throws -> Int {
        let minutes = expiresMinutes ?? 10
        guard (1...1_440).contains(minutes) else {
            throw APIError.badRequest("expiresMinutes must be 1 to 1440", field: "expiresMinutes")
        }
        return minutes
    }

    /// The account of the node `identity`, to link a device or a browser into; 409 `no_account` for a node whose key
    /// signed records before accounts existed.
    static func account(of identity: NodeIdentity, in store: ContinuumStore) async throws -> AccountID {
        guard let account = try await store.account(of: identity.author)?.account else {
            throw APIError(
                .conflict,
                "no_account",
                "this node has no account to link a device into: its key signed records before accounts existed"
            )
        }
        return account
    }

    init(_ services: APIServices) {
        self.init(
            store: services.store,
            actions: services.actions,
            identity: services.identity,
            listening: services.listening
        )
    }
}
