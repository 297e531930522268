//! An object as an expression value: its fields looked up by name in name order, each
//! field's value built on its first read, the object shared by every copy.

use super::*;

/// An object's fields as an expression value (a `map`), each built on its first read.
pub fn object(fields: &dyn FieldsOf) -> Box<dyn Val + '_> {
    Box::new(Object(Arc::new(Fields { source: fields, entries: OnceLock::new() })))
}

/// An object's fields, each built into a value on its first read.
#[derive(Debug)]
struct Fields<'v> {
    source: &'v dyn FieldsOf,
    /// The fields in name order, built on the first lookup.
    entries: OnceLock<Box<[Field<'v>]>>,
}

#[derive(Debug)]
struct Field<'v> {
    name: CelString<'v>,
    fact: &'v dyn ToCel,
    value: OnceLock<Box<dyn Val + 'v>>,
}

impl<'v> Fields<'v> {
    fn entries(&self) -> &[Field<'v>] {
        self.entries.get_or_init(|| {
            self.source
                .fields()
                .into_iter()
                .map(|(name, fact)| Field { name: CelString::from(name), fact, value: OnceLock::new() })
                .collect()
        })
    }

    fn field(&self, name: &str) -> Option<&(dyn Val + 'v)> {
        let entries = self.entries();
        let at = entries.binary_search_by(|f| by_name(f.name.inner(), name)).ok()?;
        Some(entries[at].value())
    }
}

/// Names in byte order, their first bytes compared inline: fields' names mostly differ there,
/// and calling on to compare whole names was a fifth of a field's lookup.
fn by_name(a: &str, b: &str) -> std::cmp::Ordering {
    a.as_bytes().first().cmp(&b.as_bytes().first()).then_with(|| a.cmp(b))
}

impl<'v> Field<'v> {
    fn value(&self) -> &(dyn Val + 'v) {
        self.value.get_or_init(|| self.fact.cel()).as_ref()
    }
}

/// An object: a `map` of its fields to the interpreter, shared by every copy.
#[derive(Debug)]
struct Object<'v>(Arc<Fields<'v>>);

impl Val for Object<'_> {
    fn get_type(&self) -> &Type {
        &cel::common::types::MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &cel::common::types::MAP_TYPE
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        Some(self)
    }

    /// As a map: the same keys, with equal values.
    fn equals(&self, other: &dyn Val) -> bool {
        let (Some(sizer), Some(indexer)) = (other.as_sizer(), other.as_indexer()) else { return false };
        other.get_type().kind() == Kind::Map
            && *sizer.size().inner() == self.0.source.len() as i64
            && self
                .0
                .entries()
                .iter()
                .all(|f| indexer.get(&f.name).is_ok_and(|theirs| f.value().equals(theirs.as_ref())))
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(Object(Arc::clone(&self.0)))
    }
}

impl Container for Object<'_> {
    fn contains(&self, key: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(key.downcast_ref::<CelString>().is_some_and(|name| self.0.source.contains(name.inner())))
    }
}

impl<'v> Indexer for Object<'v> {
    fn get<'b, 'w>(&'b self, key: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let Some(name) = key.downcast_ref::<CelString>() else {
            return Err(ExecutionError::UnexpectedType {
                got: key.get_type().name().to_owned(),
                want: "string".into(),
            });
        };
        self.0.field(name.inner()).map(CowVal::Borrowed).ok_or_else(|| ExecutionError::no_such_key(name.inner()))
    }

    fn steal<'w>(self: Box<Self>, key: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        self.get(key).map(CowVal::into_owned)
    }
}

impl Iterable for Object<'_> {
    fn iter<'b, 'w>(&'b self) -> Box<dyn cel::common::traits::Iterator<'b, 'w> + 'b>
    where
        Self: 'w,
    {
        Box::new(Names(self.0.entries().iter()))
    }
}

/// An object's field names, as a comprehension over a map iterates them.
struct Names<'b, 'v>(std::slice::Iter<'b, Field<'v>>);

impl<'b, 'v: 'w, 'w> cel::common::traits::Iterator<'b, 'w> for Names<'b, 'v> {
    fn next(&mut self) -> Option<&'b (dyn Val + 'w)> {
        self.0.next().map(|f| &f.name as &dyn Val)
    }
}

impl Sizer for Object<'_> {
    fn size(&self) -> CelInt {
        CelInt::from(self.0.source.len() as i64)
    }
}

impl Zeroer for Object<'_> {
    fn is_zero_value(&self) -> bool {
        self.0.source.is_empty()
    }
}
