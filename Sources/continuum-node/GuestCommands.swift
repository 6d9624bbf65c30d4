import ArgumentParser
import ContinuumCore
import ContinuumHTTP
import ContinuumNode
import ContinuumStore
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct GuestLinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guest-link",
        abstract: "Open a group to guests: a link (and its QR code) that a guest's phone opens to post as itself.",
        discussion: """
            A guest opens the link in the phone's browser, picks a name, and is in: its browser makes its own keys, \
            and this node adds it to the group. It sees that group alone, and changes only what it wrote. The link \
            admits any number of guests (up to 500) until it expires or is closed ('guest-link --close'). The \
            running node's web UI must be reachable from the phones: 'run --api-listen 0.0.0.0:7421 --api-tls'.
            """
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Option(help: ArgumentHelp("The group: its name or the start of its id (default: the only one).", valueName: "G"))
    var group: String?

    @Option(help: "Hours until the link expires (1 to 168).")
    var hours = 24

    @Flag(help: "Close the group's open guest links instead (every group's, without --group).")
    var close = false

    func validate() throws {
        guard (1...168).contains(hours) else { throw ValidationError("--hours must be 1 to 168 (a week)") }
    }

    struct LinkJSON: Encodable {
        let url: String
        let group: GroupID
        let groupName: String?
        let expiresAt: String
    }

    func run() async throws {
        let context = try options.open()
        if close {
            let id = try await group.asyncMap { try await GroupChoice.resolve($0, in: context.store) }
            let closed = try await context.store.closeGuestLinks(of: id)
            if output.json { return try Output.json(["closed": closed]) }
            return print(closed == 1 ? "closed 1 guest link" : "closed \(closed) guest links")
        }
        let identity = try context.identity()
        let id = try await GroupChoice.resolve(group, in: context.store, adminOnly: group == nil)
        guard let page = Self.webAddress(in: context.directory) else {
            throw CLIError(
                "no web UI address is known: start the node with its API where phones reach it, such as "
                    + "'continuum-node run --api-listen 0.0.0.0:7421 --api-tls', then ask again"
            )
        }
        let ticket = try await context.store.newGuestLink(to: id, lifetime: .seconds(hours * 3600), by: identity)
        let url = page + "#guest=" + ticket.secret.base64URL
        let name = try await context.store.groups().first { $0.id == id }?.name
        if output.json {
            return try Output.json(LinkJSON(url: url, group: id, groupName: name, expiresAt: ticket.expiresAt.rfc3339))
        }
        print(url)
        if let host = URLComponents(string: url)?.host, ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) {
            FileHandle.standardError.write(
                Data(
                    ("warning: the node's web UI listens on this machine only: phones cannot open this link; run "
                        + "'continuum-node run --api-listen 0.0.0.0:7421 --api-tls' for them\n").utf8
                )
            )
        }
        if isatty(STDERR_FILENO) == 1, let qr = try? QRCode(encoding: url) {
            FileHandle.standardError.write(Data((qr.terminalText() + "\n").utf8))
        }
        FileHandle.standardError.write(
            Data(
                ("guests of \(name ?? id.short), until \(ticket.expiresAt.rfc3339): scan it with a phone's camera; "
                    + "'continuum-node guests' lists who came\n").utf8
            )
        )
    }

    /// Where the running node keeps its web UI's address for phones (written when its API listens).
    static func webAddressURL(_ directory: DataDirectory) -> URL {
        directory.url.appendingPathComponent("web-address")
    }

    /// Forgets the web UI's address (the API stopped, or does not run).
    static func forgetWebAddress(in directory: DataDirectory) {
        // Absent already is the usual case; any other failure leaves an address that `guest-link` prints while no API
        // serves it, which the person sees at once: nothing to stop the node for.
        try? FileManager.default.removeItem(at: webAddressURL(directory))
    }

    /// The web UI's address a phone opens, as the running node last wrote it; nil when none is known.
    static func webAddress(in directory: DataDirectory) -> String? {
        guard let data = FileManager.default.contents(atPath: webAddressURL(directory).path) else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// Keeps the web UI's address for phones (a LAN address, else the one the API listens on), for `guest-link`.
    static func keepWebAddress(
        _ url: String,
        _ configuration: APIConfiguration,
        in directory: DataDirectory,
        logger: Logger
    ) {
        let port = URLComponents(string: url)?.port ?? configuration.port
        let lan = PhoneAccess(
            host: configuration.host,
            port: port,
            tls: configuration.tls != nil,
            token: nil,
            interfaces: PhoneAccess.interfaceAddresses()
        ).urls.first
        do {
            let page = lan ?? (url.hasSuffix("/") ? url : url + "/")
            try Data((page + "\n").utf8).write(to: webAddressURL(directory), options: .atomic)
        } catch {
            // Only `guest-link` reads it, and says what to do when it is missing: the node serves on.
            logger.warning("cannot keep the web UI's address for guest-link: \(error)")
        }
    }
}

struct GuestsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guests",
        abstract: "List the guests this node let in, and its guest links."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    struct GuestJSON: Encodable {
        let device: AuthorID
        let log: AuthorID
        let name: String
        let group: GroupID
        let groupName: String?
        let joinedAt: String
        let state: String
        let posts: Int
    }

    struct LinkJSON: Encodable {
        let group: GroupID
        let groupName: String?
        let expiresAt: String
        let state: String
        let guests: Int
    }

    struct ListJSON: Encodable {
        let guests: [GuestJSON]
        let links: [LinkJSON]
    }

    func run() async throws {
        let context = try options.open()
        let guests = try await context.store.guests()
        let now = Timestamp.now()
        let links = try await context.store.guestLinks()
        func state(_ link: GuestLinkSummary) -> String {
            link.closed ? "closed" : link.expiresAt > now ? "open" : "expired"
        }
        if output.json {
            let shown = guests.map {
                GuestJSON(
                    device: $0.device,
                    log: $0.log,
                    name: $0.name,
                    group: $0.group,
                    groupName: $0.groupName,
                    joinedAt: $0.joinedAt.rfc3339,
                    state: $0.state.name,
                    posts: $0.posts
                )
            }
            let open = links.map {
                LinkJSON(
                    group: $0.group,
                    groupName: $0.groupName,
                    expiresAt: $0.expiresAt.rfc3339,
                    state: state($0),
                    guests: $0.guests
                )
            }
            return try Output.json(ListJSON(guests: shown, links: open))
        }
        if guests.isEmpty { print("no guests yet") }
        for guest in guests {
            let state = guest.state == .active ? "" : "  (\(guest.state.name))"
            print(
                "\(guest.device.short)  \(guest.name)  in \(guest.groupName ?? guest.group.short)  "
                    + "\(guest.posts) posts  since \(guest.joinedAt.rfc3339)\(state)"
            )
        }
        for link in links {
            print(
                "link to \(link.groupName ?? link.group.short): \(state(link)), \(link.guests) guests, until \(link.expiresAt.rfc3339)"
            )
        }
    }
}

struct GuestRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guest-remove",
        abstract: "Remove a guest from its group (what it posted stays); with --block, erase it here too.",
        discussion: "The guest's browser is refused from its next request on."
    )

    @OptionGroup var options: DataOptions
    @OptionGroup var output: OutputOptions

    @Argument(
        help: ArgumentHelp(
            "The guest: its name, or the start of its device key ('guests' lists them).",
            valueName: "GUEST"
        )
    )
    var guest: String

    @Flag(help: "Also block it on this node: what it wrote is erased here, and what it writes later is not kept.")
    var block = false

    func run() async throws {
        let context = try options.open()
        let identity = try context.identity()
        let guests = try await context.store.guests()
        let matches = guests.filter { $0.name == guest || $0.device.hex.hasPrefix(guest.lowercased()) }
        guard matches.count == 1, let found = matches.first else {
            throw CLIError(
                matches.isEmpty
                    ? "no guest is called or has a device key starting with '\(guest)'; 'continuum-node guests' lists them"
                    : "'\(guest)' matches \(matches.count) guests; give the start of the device key"
            )
        }
        let removed = try await context.actions().removeGuest(found.device, block: block, by: identity)
        if output.json {
            return try Output.json([
                "device": removed.device.hex, "name": removed.name, "state": removed.state.name,
            ])
        }
        print("\(removed.name) (\(removed.device.short)) is \(removed.state.name)")
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
