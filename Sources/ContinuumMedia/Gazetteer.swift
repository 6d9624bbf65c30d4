import CGeonames
import ContinuumCore
import Foundation
import Synchronization

/// A city of the GeoNames gazetteer.
public struct Place: Sendable, Hashable {
    public let name: String
    /// The region (a state, a province), when GeoNames names one.
    public let region: String?
    public let country: String
    /// ISO 3166-1 alpha-2, `FR`.
    public let countryCode: String
    public let coordinate: Coordinate
    public let population: Int

    /// "Paris, France".
    public var title: String { "\(name), \(country)" }
}

/// Places, offline: the cities of GeoNames as Debian packages them (libgeonames: about 24,000 cities of 15,000 people
/// or more, with their region, country and position), for where a photo was taken (the nearest city) and for a place
/// typed by its name ("near Paris"). The cities are read on first use (about 40 ms of one core) and held, a few MiB;
/// a lookup is then a scan of their positions. Credit: GeoNames (geonames.org), CC BY 4.0.
public final class Gazetteer: Sendable {
    /// The cities, once read (nil until the first lookup).
    private let table = Mutex<Table?>(nil)

    /// The cities, and each one's position as a point on the unit sphere, in three arrays side by side: the nearest
    /// city to a position is the one whose point has the largest dot product with the position's (great-circle
    /// order, with three multiplications a city and no trigonometry).
    private struct Table {
        let places: [Place]
        let x: [Double]
        let y: [Double]
        let z: [Double]

        init(_ places: [Place]) {
            self.places = places
            let points = places.map { Gazetteer.point($0.coordinate) }
            x = points.map(\.x)
            y = points.map(\.y)
            z = points.map(\.z)
        }
    }

    public init() {}

    /// The city nearest to `coordinate`, and its distance in km; nil only when the gazetteer holds no city.
    public func nearest(to coordinate: Coordinate) -> (place: Place, distanceKm: Double)? {
        let table = self.all()
        let target = Self.point(coordinate)
        var best = -Double.infinity
        var index = -1
        for city in table.places.indices {
            let dot = table.x[city] * target.x + table.y[city] * target.y + table.z[city] * target.z
            if dot > best {
                best = dot
                index = city
            }
        }
        guard index >= 0 else { return nil }
        let place = table.places[index]
        return (place, Self.distanceKm(coordinate, place.coordinate))
    }

    /// The cities whose name matches `name` (GeoNames' own matching: case and accents aside, also the start of a
    /// name), the most populous first; at most `limit`.
    public func find(_ name: String, limit: Int = 10) -> [Place] {
        let text = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return [] }
        let places = all().places
        var count: guint = 0
        guard let indices = geonames_query_cities_sync(text, GEONAMES_QUERY_DEFAULT, &count, nil, nil) else {
            return []
        }
        defer { g_free(indices) }
        let found = (0..<Int(count)).compactMap { offset -> Place? in
            let index = Int(indices[offset])
            return places.indices.contains(index) ? places[index] : nil
        }
        return Array(found.sorted { $0.population > $1.population }.prefix(limit))
    }

    /// Every city, read from libgeonames on first use.
    private func all() -> Table {
        table.withLock { held in
            if let held { return held }
            let read = Table(Self.read())
            held = read
            return read
        }
    }

    /// A position as a point on the unit sphere.
    static func point(_ coordinate: Coordinate) -> (x: Double, y: Double, z: Double) {
        let latitude = coordinate.latitude * Double.pi / 180
        let longitude = coordinate.longitude * Double.pi / 180
        return (cos(latitude) * cos(longitude), cos(latitude) * sin(longitude), sin(latitude))
    }

    /// Every city of libgeonames, in its own order (the indices its queries answer with).
    private static func read() -> [Place] {
        let count = Int(geonames_get_n_cities())
        var places: [Place] = []
        places.reserveCapacity(count)
        for index in 0..<count {
            guard let city = geonames_get_city(gint(index)) else { continue }
            defer { geonames_city_free(city) }
            func text(_ value: UnsafePointer<gchar>?) -> String { value.map { String(cString: $0) } ?? "" }
            let region = text(geonames_city_get_state(city))
            places.append(
                Place(
                    name: text(geonames_city_get_name(city)),
                    region: region.isEmpty ? nil : region,
                    country: text(geonames_city_get_country(city)),
                    countryCode: text(geonames_city_get_country_code(city)),
                    coordinate: Coordinate(
                        latitude: geonames_city_get_latitude(city),
                        longitude: geonames_city_get_longitude(city)
                    ) ?? Coordinate(latitudeE7: 0, longitudeE7: 0),
                    population: Int(geonames_city_get_population(city))
                )
            )
        }
        return places
    }

    /// The great-circle distance in km (haversine, mean Earth radius).
    static func distanceKm(_ a: Coordinate, _ b: Coordinate) -> Double {
        let radians = Double.pi / 180
        let dLatitude = (b.latitude - a.latitude) * radians
        let dLongitude = (b.longitude - a.longitude) * radians
        let s =
            pow(sin(dLatitude / 2), 2) + cos(a.latitude * radians) * cos(b.latitude * radians)
            * pow(sin(dLongitude / 2), 2)
        return 2 * 6371.0088 * asin(min(1, s.squareRoot()))
    }
}
