import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird

/// What a guest's session sees (Docs/API.md, "Guests"): the posts, photos and thumbnails of its group alone. The
/// owner's requests and a linked phone's see everything the node holds.
struct GuestScope: Sendable {
    var sessions: BrowserSessions?

    /// Who a guest's request is: its group, its account, its log there (the viewer of its reactions).
    struct Guest: Sendable {
        let group: GroupID
        let account: AccountID
        let log: AuthorID
    }

    /// The guest a request is made by; nil for any other request.
    func guest(of request: Request, in store: ContinuumStore) async throws -> Guest? {
        guard let sessions, let token = BrowserSessions.token(of: request), let session = await sessions.session(token),
            let group = session.group, let guest = try await store.guest(session.device)
        else { return nil }
        return Guest(group: group, account: session.account, log: guest.log)
    }

    /// The group a guest's request is scoped to; nil for any other request.
    func group(of request: Request) async -> GroupID? {
        guard let sessions, let token = BrowserSessions.token(of: request) else { return nil }
        return await sessions.session(token)?.group
    }

    /// The post a guest's path names: its whole id (64 hex digits), else 404 `unknown_post`.
    static func wholePost(_ context: BasicRequestContext) throws -> PostID {
        let text = try context.parameters.require("id")
        guard let id = PostID(hex: text) else {
            throw APIError(.notFound, "unknown_post", "no post \(text) on this node (a guest gives a post's whole id)")
        }
        return id
    }

    /// Throws 404 `unknown_post` when a guest asks for a post of another group (as if the node did not hold it).
    func check(post: PostID, of request: Request, in store: ContinuumStore) async throws {
        guard let group = await group(of: request) else { return }
        guard try await store.group(ofPost: post) == group else {
            throw APIError(.notFound, "unknown_post", "no post \(post.short) on this node")
        }
    }

    /// Whether the request may have the photo `hash`: always, unless a guest's, which gets those its group shows.
    func shows(_ hash: AssetHash, to request: Request, in store: ContinuumStore) async throws -> Bool {
        guard let group = await group(of: request) else { return true }
        return try await store.isPhotoShown(hash, inGroups: [group])
    }
}

/// Guests (Docs/API.md, "Guests"): the owner opens a group to guests with a link (a URL with `#guest=CODE` and its
/// QR code); a guest's browser makes its own account and keys, picks a name, and is let in by this node's admin log.
/// The owner lists, removes and blocks guests, and closes links.
struct GuestRoutes: Sendable {
    let browser: BrowserRoutes

    var store: ContinuumStore { browser.store }

    func register(on api: RouterGroup<BasicRequestContext>) {
        api.post("guests/link") { request, context in try await makeLink(request, context: context) }
        api.get("guests") { _, _ in try await list() }
        api.post("guests/close") { request, context in try await close(request, context: context) }
        api.delete("guests/:device") { request, context in try await remove(request, context: context, block: false) }
        api.post("guests/:device/block") { request, context in
            try await remove(request, context: context, block: true)
        }
        api.post("browser/guest/inspect") { request, context in try await inspect(request, context: context) }
        api.post("browser/guest/accept") { request, context in try await accept(request, context: context) }
    }

    // MARK: The owner's

    struct LinkBody: Decodable {
        let group: String?
        let hours: Int?
    }

    struct LinkJSON: Encodable {
        let url: String
        let code: String
        let group: String
        let groupName: String?
        let expiresAt: String
        let qrSvg: String?
    }

    /// `POST /api/guests/link`: a link that opens `group` (default: the only one this node is an admin of) to
    /// guests for `hours` (default 24, at most a week).
    func makeLink(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: LinkBody.self, context: context)
        let hours = body.hours ?? 24
        guard (1...168).contains(hours) else {
            throw APIError.badRequest("hours must be 1 to 168 (a week)", field: "hours")
        }
        let group = try await storeCall(noun: "group", field: "group") {
            try await GroupChoice.resolve(
                body.group,
                in: store,
                adminOnly: body.group == nil,
                choosing: "the field group"
            )
        }
        let ticket = try await storeCall(noun: "group", field: "group") {
            try await store.newGuestLink(to: group, lifetime: .seconds(hours * 3600), by: browser.identity)
        }
        let code = ticket.secret.base64URL
        let url = browser.pageURL(request) + "#guest=" + code
        let name = try await store.groups().first { $0.id == group }?.name
        return try json(
            LinkJSON(
                url: url,
                code: code,
                group: group.hex,
                groupName: name,
                expiresAt: ticket.expiresAt.rfc3339,
                qrSvg: (try? QRCode(encoding: url))?.svg()
            ),
            status: .created
        )
    }

    struct GuestJSON: Encodable {
        let device: String
        let account: String?
        let log: String
        let name: String
        let group: String
        let groupName: String?
        let joinedAt: String
        /// `active`, `removed` or `blocked`.
        let state: String
        let posts: Int

        init(_ guest: GuestSummary) {
            device = guest.device.hex
            account = guest.account?.hex
            log = guest.log.hex
            name = guest.name
            group = guest.group.hex
            groupName = guest.groupName
            joinedAt = guest.joinedAt.rfc3339
            state = guest.state.name
            posts = guest.posts
        }
    }

    struct GuestLinkJSON: Encodable {
        let id: String
        let group: String
        let groupName: String?
        let createdAt: String
        let expiresAt: String
        /// `open`, `closed` or `expired`.
        let state: String
        let guests: Int
    }

    struct ListJSON: Encodable {
        let links: [GuestLinkJSON]
        let guests: [GuestJSON]
    }

    /// `GET /api/guests`: the guest links and the guests, newest first.
    func list() async throws -> Response {
        let now = Timestamp.now()
        let links = try await store.guestLinks().map { link in
            GuestLinkJSON(
                id: link.id.map { String(format: "%02x", $0) }.joined(),
                group: link.group.hex,
                groupName: link.groupName,
                createdAt: link.createdAt.rfc3339,
                expiresAt: link.expiresAt.rfc3339,
                state: link.closed ? "closed" : link.expiresAt > now ? "open" : "expired",
                guests: link.guests
            )
        }
        return try json(ListJSON(links: links, guests: try await store.guests().map(GuestJSON.init)))
    }

    struct CloseBody: Decodable { let group: String? }

    /// `POST /api/guests/close`: closes the open guest links of `group` (every group's without it).
    func close(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: CloseBody.self, context: context)
        var group: GroupID?
        if let text = body.group {
            group = try await storeCall(noun: "group", field: "group") {
                try await GroupChoice.resolve(text, in: store, choosing: "the field group")
            }
        }
        let closed = try await store.closeGuestLinks(of: group)
        return try json(["closed": closed])
    }

    /// `DELETE /api/guests/{device}` (remove) and `POST /api/guests/{device}/block` (remove and block).
    func remove(_ request: Request, context: BasicRequestContext, block: Bool) async throws -> Response {
        let text = try context.parameters.require("device")
        guard let device = AuthorID(hex: text) else {
            throw APIError.badRequest("'\(text)' is not a guest's device key: 64 hex digits", field: "device")
        }
        let guest = try await storeCall(noun: "guest") {
            try await browser.actions.removeGuest(device, block: block, by: browser.identity)
        }
        // Its session ends at its next request (the access rules see the guest removed), with a message that says so.
        return try json(GuestJSON(guest))
    }

    // MARK: The guest's

    struct InspectJSON: Encodable {
        let group: String
        let groupName: String?
        /// The name of the person whose node this is.
        let host: String?
    }

    /// `POST /api/browser/guest/inspect`: which group a guest link opens, before the guest picks a name.
    func inspect(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: BrowserRoutes.CodeBody.self, context: context)
        let secret = try BrowserRoutes.linkSecret(body.code, fragment: "guest")
        let (group, name) = try await BrowserRoutes.linkCall {
            try await store.guestLinkGroup(id: Data(InviteCode.id(of: secret)), proves: { $0 == secret })
        }
        return try json(
            InspectJSON(group: group.hex, groupName: name, host: try await store.accountName(of: browser.identity))
        )
    }

    struct AcceptBody: Decodable {
        let code: String
        let name: String
        let device: String
        let log: String
        let record: String
    }

    /// `POST /api/browser/guest/accept`: the guest's name, its device key and founding record (kind 8, sequence 1,
    /// signed in the browser), and its log key for the group. The node adds the log to the group, naming the device
    /// as its node, and opens the guest's session. The browser then signs its name in its log.
    func accept(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: AcceptBody.self, context: context)
        let secret = try BrowserRoutes.linkSecret(body.code, fragment: "guest")
        let name = try Self.guestName(body.name)
        guard let device = AuthorID(hex: body.device), let log = AuthorID(hex: body.log), log != device else {
            throw APIError.badRequest("device and log must be two public keys of the browser: 64 hex digits each")
        }
        // Charged to the link, once known, before the work (a signature to check, two records to store and send to
        // every peer).
        let link = Data(InviteCode.id(of: secret))
        _ = try await BrowserRoutes.linkCall { try await store.guestLinkGroup(id: link, proves: { $0 == secret }) }
        if let wait = await browser.sessions.charge(key: link, BrowserSessions.joinCost) {
            throw BrowserRoutes.rateLimited(wait, "guests join by this link faster than the node lets them")
        }
        let founding = try browser.verified(body.record, field: "record")
        guard founding.header.author == device, founding.header.sequence == 1, let content = founding.body,
            AccountRecord(content, author: device) == .founding(recovery: nil)
        else {
            throw APIError.badRequest(
                "record must found the guest's account: kind 8, sequence 1, signed by the device, no recovery key",
                field: "record"
            )
        }
        let (group, _) = try await BrowserRoutes.linkCall {
            try await browser.actions.admitGuest(
                link: link,
                proves: { $0 == secret },
                founding: founding,
                log: log,
                name: name,
                by: browser.identity
            )
        }
        return try await browser.sessionResponse(
            device: device,
            account: AccountID(founding: founding.id),
            group: group,
            name: name,
            request: request,
            status: .created
        )
    }

    /// A guest's display name: 1 to 64 bytes of UTF-8, not blank, no control characters.
    static func guestName(_ text: String) throws -> String {
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty, name.utf8.count <= Limits.nameBytes,
            !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw APIError.badRequest(
                "name must be 1 to \(Limits.nameBytes) bytes of text, not blank, with no control characters",
                field: "name"
            )
        }
        return name
    }

}
