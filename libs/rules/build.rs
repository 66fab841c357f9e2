//! Generates the attack tables at build time: magic factors found by a deterministic
//! search, the slider attack table they index, and `between`/`line` for every square pair.
//! The output is plain `static` arrays, so a look-up at run time is a load, with no
//! lazy-initialisation check in the hot path.

use std::fmt::Write as _;
use std::path::PathBuf;

const ROOK_DIRS: [(i8, i8); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
const BISHOP_DIRS: [(i8, i8); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];

fn on_board(f: i8, r: i8) -> bool {
    (0..8).contains(&f) && (0..8).contains(&r)
}

fn slide(sq: usize, occupied: u64, dirs: &[(i8, i8); 4]) -> u64 {
    let mut bb = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = ((sq % 8) as i8, (sq / 8) as i8);
        loop {
            f += df;
            r += dr;
            if !on_board(f, r) {
                break;
            }
            let bit = 1u64 << (r * 8 + f);
            bb |= bit;
            if occupied & bit != 0 {
                break;
            }
        }
    }
    bb
}

/// The squares whose occupancy matters to a slider on `sq`: its rays without the edge.
fn relevant_mask(sq: usize, dirs: &[(i8, i8); 4]) -> u64 {
    let mut bb = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = ((sq % 8) as i8, (sq / 8) as i8);
        while on_board(f + 2 * df, r + 2 * dr) {
            f += df;
            r += dr;
            bb |= 1u64 << (r * 8 + f);
        }
    }
    bb
}

/// xorshift64*: fixed seed, so the search (and the tables) are the same on every build.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

struct Magic {
    mask: u64,
    factor: u64,
    shift: u32,
    offset: usize,
}

fn find_magics(dirs: &[(i8, i8); 4], table: &mut Vec<u64>, rng: &mut Prng) -> Vec<Magic> {
    let mut magics = Vec::with_capacity(64);
    let mut epoch = vec![0u32; 4096];
    let mut used = vec![0u64; 4096];
    let mut attempt = 0u32;
    for sq in 0..64 {
        let mask = relevant_mask(sq, dirs);
        let bits = mask.count_ones();
        let shift = 64 - bits;
        // Carry-Rippler enumeration of every subset of the mask.
        let mut cases = Vec::with_capacity(1 << bits);
        let mut subset = 0u64;
        loop {
            cases.push((subset, slide(sq, subset, dirs)));
            subset = subset.wrapping_sub(mask) & mask;
            if subset == 0 {
                break;
            }
        }
        'search: loop {
            let factor = rng.next() & rng.next() & rng.next();
            if (mask.wrapping_mul(factor) >> 56).count_ones() < 6 {
                continue;
            }
            attempt += 1;
            for &(occ, att) in &cases {
                let i = (occ.wrapping_mul(factor) >> shift) as usize;
                if epoch[i] < attempt {
                    epoch[i] = attempt;
                    used[i] = att;
                } else if used[i] != att {
                    continue 'search;
                }
            }
            let offset = table.len();
            table.resize(offset + (1 << bits), 0);
            for &(occ, att) in &cases {
                table[offset + (occ.wrapping_mul(factor) >> shift) as usize] = att;
            }
            magics.push(Magic {
                mask,
                factor,
                shift,
                offset,
            });
            break;
        }
    }
    magics
}

fn ray_tables() -> (Vec<u64>, Vec<u64>) {
    let mut between = vec![0u64; 64 * 64];
    let mut line = vec![0u64; 64 * 64];
    for a in 0..64usize {
        let (fa, ra) = ((a % 8) as i8, (a / 8) as i8);
        for b in 0..64usize {
            let (fb, rb) = ((b % 8) as i8, (b / 8) as i8);
            let (df, dr) = (fb - fa, rb - ra);
            let aligned = a != b && (df == 0 || dr == 0 || df.abs() == dr.abs());
            if !aligned {
                continue;
            }
            let (sf, sr) = (df.signum(), dr.signum());
            // Strictly between.
            let (mut f, mut r) = (fa + sf, ra + sr);
            while (f, r) != (fb, rb) {
                between[a * 64 + b] |= 1u64 << (r * 8 + f);
                f += sf;
                r += sr;
            }
            // The whole line through both, edge to edge.
            let mut full = 1u64 << a;
            for sign in [1i8, -1] {
                let (mut f, mut r) = (fa, ra);
                while on_board(f + sf * sign, r + sr * sign) {
                    f += sf * sign;
                    r += sr * sign;
                    full |= 1u64 << (r * 8 + f);
                }
            }
            line[a * 64 + b] = full;
        }
    }
    (between, line)
}

fn write_array(out: &mut String, name: &str, values: &[u64]) {
    let _ = writeln!(out, "static {name}: [u64; {}] = [", values.len());
    for chunk in values.chunks(8) {
        out.push_str("   ");
        for v in chunk {
            let _ = write!(out, " {v:#x},");
        }
        out.push('\n');
    }
    out.push_str("];\n");
}

fn write_magics(out: &mut String, name: &str, magics: &[Magic]) {
    let _ = writeln!(out, "static {name}: [Magic; 64] = [");
    for m in magics {
        let _ = writeln!(
            out,
            "    Magic {{ mask: {:#x}, factor: {:#x}, shift: {}, offset: {} }},",
            m.mask, m.factor, m.shift, m.offset
        );
    }
    out.push_str("];\n");
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut rng = Prng(0x9e37_79b9_7f4a_7c15);
    let mut table = Vec::with_capacity(102_400 + 5_248);
    let rook = find_magics(&ROOK_DIRS, &mut table, &mut rng);
    let bishop = find_magics(&BISHOP_DIRS, &mut table, &mut rng);
    let (between, line) = ray_tables();
    let mut out = String::with_capacity(4 << 20);
    out.push_str("// Generated by build.rs. Do not edit.\n");
    write_magics(&mut out, "ROOK_MAGICS", &rook);
    write_magics(&mut out, "BISHOP_MAGICS", &bishop);
    write_array(&mut out, "SLIDER_ATTACKS", &table);
    write_array(&mut out, "BETWEEN", &between);
    write_array(&mut out, "LINE", &line);
    let path = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("attack_tables.rs");
    std::fs::write(path, out).expect("write the generated tables");
}
