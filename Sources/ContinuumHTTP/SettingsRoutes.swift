import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Foundation
import Hummingbird

/// This node's settings and how to reach it: its display name, a photo fetched on demand, the web UI from a phone
/// (the routes tagged `settings` in the OpenAPI document).
struct SettingsRoutes: Sendable {
    let store: ContinuumStore
    /// The node's identity: its name is signed with it.
    let identity: NodeIdentity
    /// Every write: here, the display name.
    let actions: NodeActions
    /// Fetches a photo on demand.
    let engine: SyncEngine
    /// Where the API listens, for the phone's address.
    let configuration: APIConfiguration
    /// The address the API is bound to (`host:port`, the real port when 0 was asked for).
    let address: @Sendable () -> String

    /// Adds the settings routes to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        api.put("name") { request, context in try await setName(request, context: context) }
        api.post("photos/:sha256/fetch") { _, context in try await fetchPhoto(context) }
        api.get("phone") { _, _ in try json(PhoneJSON(phoneAccess(), certificate: configuration.tls)) }
    }

    struct NameBody: Decodable {
        let name: String?
    }

    /// `PUT /api/name`: this node's display name, as `init --name` sets it (one Profile record, sent to peers).
    func setName(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: NameBody.self, context: context)
        guard let name = body.name, !TextRules.isBlank(name) else {
            throw APIError(.badRequest, "missing_name", "give a display name, such as Alice", field: "name")
        }
        // The same name again signs nothing, as `init --name` does.
        if try await store.displayName(of: identity.author) != name {
            try await withInvalidText(field: "name") {
                try await actions.setName(name, by: identity)
            }
        }
        return try json(["name": try await store.displayName(of: identity.author) ?? name])
    }

    struct FetchJSON: Encodable {
        let sha256: AssetHash
        let here: Bool
        @Nullable var connectedPeers: Int?
        let message: String
    }

    /// `POST /api/photos/{sha256}/fetch`: fetch a photo now, whatever its size (one over `--max-photo-mb` is
    /// otherwise never fetched). 200 when it is here already; 202 once asked: `photoProgress` events, then
    /// `photoArrived`, follow on `/api/events?progress=true`.
    func fetchPhoto(_ context: BasicRequestContext) async throws -> Response {
        let hash = try photoHash(context)
        if try await store.hasPhoto(hash) {
            return try json(FetchJSON(sha256: hash, here: true, connectedPeers: nil, message: "the photo is here"))
        }
        guard try await store.isPhotoShown(hash) else {
            throw APIError(
                .notFound,
                "unknown_photo",
                "no post here shows photo \(hash.short): it was deleted (and erased), or its post has not come"
            )
        }
        await engine.fetchPhoto(hash)
        let peers = await engine.connectedPeers().count
        let message =
            peers == 0
            ? "no peer is connected; the node will fetch the photo when a peer that has it connects"
            : "fetching the photo from the \(peers) connected peer\(peers == 1 ? "" : "s")"
        return try json(
            FetchJSON(sha256: hash, here: false, connectedPeers: peers, message: message),
            status: .accepted
        )
    }

    /// Where a phone opens this API: from the address it listens on and this machine's interfaces, now.
    func phoneAccess() -> PhoneAccess {
        let address = address()
        let port = address.split(separator: ":").last.flatMap { Int($0) } ?? configuration.port
        return PhoneAccess(
            host: configuration.host,
            port: port,
            tls: configuration.tls != nil,
            token: configuration.token,
            interfaces: PhoneAccess.interfaceAddresses()
        )
    }

    /// `GET /api/phone`.
    struct PhoneJSON: Encodable {
        let urls: [String]
        @Nullable var url: String?
        @Nullable var qr: String?
        let reachable: Bool
        let tls: Bool
        @Nullable var fingerprint: String?
        let message: String

        init(_ access: PhoneAccess, certificate: APICertificate?) {
            urls = access.urls
            url = access.urls.first
            qr = access.qrSVG
            reachable = access.reachable
            tls = certificate != nil
            fingerprint = certificate?.fingerprint
            message = access.message
        }
    }
}

extension SettingsRoutes {
    /// The settings routes over the parts of `services` they use, for the API `configuration` bound at `address`.
    init(_ services: APIServices, configuration: APIConfiguration, address: @escaping @Sendable () -> String) {
        self.init(
            store: services.store,
            identity: services.identity,
            actions: services.actions,
            engine: services.engine,
            configuration: configuration,
            address: address
        )
    }
}
